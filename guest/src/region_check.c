/* The header checks (docs/protocol.md §2): whether a mapping is an ivcuda region this library
 * can use. The header is the server's, written before any guest runs, but the region is
 * shared memory: every field is read once, checked against the mapped size and the layout
 * this library was built with, and a refusal names the field, what it held and what was
 * expected. Kept apart from finding and mapping (region.c) and from placing the mapping
 * (region_place.c) because both judge a mapping with it; neither depends on the other. */
#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "ivc_api.h"
#include "ivc_internal.h"
#include "region_check.h"

#define CHECK(condition, ...)                                  \
    do {                                                       \
        if (!(condition)) {                                    \
            snprintf(message, capacity, __VA_ARGS__);          \
            return 0;                                          \
        }                                                      \
    } while (0)

int ivc_region_check(const uint8_t *base, size_t mapped, char *message, size_t capacity)
{
    return ivc_region_check_layout(base, mapped, NULL, message, capacity);
}

int ivc_region_check_layout(const uint8_t *base, size_t mapped, struct ivc_region *layout, char *message,
                            size_t capacity)
{
    CHECK(mapped >= IVC_HEADER_SIZE, "region_size %zu bytes mapped, expected at least the %u-byte header",
          mapped, IVC_HEADER_SIZE);
    uint64_t magic = ivc_read64(base + IVC_HDR_MAGIC);
    CHECK(magic == IVC_MAGIC, "magic 0x%016" PRIx64 ", expected 0x%016llx (\"IVCUDA01\") — not an ivcuda region",
          magic, IVC_MAGIC);
    uint32_t protocol = ivc_read32(base + IVC_HDR_PROTOCOL_VERSION);
    CHECK(protocol == IVC_PROTOCOL_VERSION,
          "protocol_version %u, this library speaks %d — install matching ivcuda-guest and ivcuda-host",
          protocol, IVC_PROTOCOL_VERSION);
    uint64_t hash = ivc_read64(base + IVC_HDR_API_HASH);
    CHECK(hash == IVC_API_HASH,
          "api_hash 0x%016" PRIx64 ", this library has 0x%016llx — install matching ivcuda-guest and ivcuda-host",
          hash, IVC_API_HASH);
    uint32_t header_size = ivc_read32(base + IVC_HDR_HEADER_SIZE);
    CHECK(header_size == IVC_HEADER_SIZE, "header_size %u, expected %u", header_size, IVC_HEADER_SIZE);
    uint64_t region_size = ivc_read64(base + IVC_HDR_REGION_SIZE);
    CHECK(region_size == mapped, "region_size %" PRIu64 ", expected the mapped size %zu", region_size, mapped);
    uint32_t state = ivc_load32(base + IVC_HDR_SERVER_STATE);
    if (state != IVC_STATE_READY) {
        char server_message[257];
        memcpy(server_message, base + IVC_HDR_SERVER_MESSAGE, 256);
        server_message[256] = '\0';
        CHECK(0, "server_state %u, expected 1 (READY)%s%s", state, server_message[0] ? ": " : "", server_message);
    }
    uint32_t count = ivc_read32(base + IVC_HDR_CHANNEL_COUNT);
    CHECK(count >= 1, "channel_count %u, expected at least 1", count);
    uint32_t stride = ivc_read32(base + IVC_HDR_CHANNEL_STRIDE);
    CHECK(stride > 0 && stride % 4096 == 0, "channel_stride %u, expected a non-zero multiple of 4096", stride);
    uint64_t table = ivc_read64(base + IVC_HDR_CHANNEL_TABLE_OFFSET);
    CHECK(table == IVC_HEADER_SIZE, "channel_table_offset %" PRIu64 ", expected 4096", table);
    uint32_t request = ivc_read32(base + IVC_HDR_REQUEST_AREA_SIZE);
    CHECK(request >= 64 && request % 8 == 0, "request_area_size %u, expected a multiple of 8 of at least 64", request);
    uint32_t response = ivc_read32(base + IVC_HDR_RESPONSE_AREA_SIZE);
    CHECK(response >= 64 && response % 8 == 0, "response_area_size %u, expected a multiple of 8 of at least 64",
          response);
    uint32_t ring = ivc_read32(base + IVC_HDR_RING_SIZE);
    CHECK(ring >= 64 && (ring & (ring - 1)) == 0, "ring_size %u, expected a power of two of at least 64", ring);
    uint32_t window = ivc_read32(base + IVC_HDR_WINDOW_SIZE);
    CHECK(window >= 2 && window % 2 == 0, "window_size %u, expected an even number of at least 2", window);
    uint64_t areas = (uint64_t)IVC_CH_AREAS + request + response + ring + window;
    CHECK(areas <= stride, "channel_stride %u, expected at least %" PRIu64 " (0x100 + request, response, ring, window)",
          stride, areas);
    uint64_t pool_offset = ivc_read64(base + IVC_HDR_POOL_OFFSET);
    uint64_t channels_end = table + (uint64_t)count * stride;
    CHECK(pool_offset % 4096 == 0 && channels_end <= pool_offset,
          "pool_offset %" PRIu64 ", expected a multiple of 4096 at or after the channel table's end %" PRIu64,
          pool_offset, channels_end);
    uint32_t vectors = ivc_read32(base + IVC_HDR_DOORBELL_VECTORS);
    CHECK(vectors <= 2048, "doorbell_vectors %u, expected at most 2048 (the MSI-X table's limit)", vectors);
    uint64_t pool_size = ivc_read64(base + IVC_HDR_POOL_SIZE);
    CHECK(pool_offset <= region_size && pool_size <= region_size - pool_offset,
          "pool_size %" PRIu64 ", expected at most %" PRIu64 " (region_size - pool_offset)", pool_size,
          pool_offset <= region_size ? region_size - pool_offset : 0);
    if (layout != NULL) {
        layout->channel_count = count;
        layout->channel_stride = stride;
        layout->channel_table_offset = table;
        layout->request_area_size = request;
        layout->response_area_size = response;
        layout->ring_size = ring; /* the server's limit.ring.bytes: never assumed */
        layout->window_size = window;
        layout->pool_offset = pool_offset;
        layout->pool_size = pool_size;
    }
    return 1;
}
