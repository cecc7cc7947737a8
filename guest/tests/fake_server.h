/* An in-process server that follows docs/protocol.md over a region file, with host
 * memory standing in for the GPU: it tests the guest's transport, nothing more. */
#ifndef FAKE_SERVER_H
#define FAKE_SERVER_H

#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>

#include "ivc_region.h"

#define FAKE_CHANNELS 8
#define FAKE_REQUEST_AREA 4096
#define FAKE_RESPONSE_AREA 4096
#define FAKE_RING 1024
#define FAKE_WINDOW 8192
#define FAKE_STRIDE 20480
/* The channel table follows the header: the guest requires channel_table_offset == header_size
 * (protocol §2), both the generated IVC_HEADER_SIZE. */
#define FAKE_CHANNEL_TABLE IVC_HEADER_SIZE
/* channel i's first byte in a mapping of the fake region */
#define FAKE_CHANNEL(region, i) ((region) + FAKE_CHANNEL_TABLE + (size_t)(i) * FAKE_STRIDE)
#define FAKE_POOL_OFFSET (FAKE_CHANNEL_TABLE + FAKE_CHANNELS * FAKE_STRIDE)
#define FAKE_POOL_SIZE (1u << 20)
#define FAKE_REGION_SIZE (FAKE_POOL_OFFSET + FAKE_POOL_SIZE)
/* the graph handle cuStreamEndCapture answers (kind 50: graph) */
#define FAKE_CAPTURED_GRAPH 0x3200000100000001ULL
#define FAKE_DEVICE_BASE 0xD00000000ULL
/* what ivc_pointer_attribute answers for MEMPOOL_HANDLE (the only attribute it answers) */
#define FAKE_MEMPOOL 0x3900000100000007ULL
#define FAKE_DEVICE_SIZE (64u << 20)
#define FAKE_FUNCTION 0x0300000100000007ULL

struct fake_state {
    atomic_int calls[256];          /* per opcode (sync requests and ring records) */
    atomic_int pads;                /* PAD records seen */
    atomic_int frozen;              /* 1: stop answering and stop the heartbeat */
    atomic_int holding;             /* 1: leave requests unanswered, heartbeat on (fake_server_hold) */
    atomic_int refuse_hello;        /* 1: answer hello with a different api hash; 2: CUDA_ERROR_SYSTEM_NOT_READY */
    uint8_t *device;                /* FAKE_DEVICE_SIZE bytes of "device memory" */
    uint8_t last_launch[4096];
    atomic_uint last_launch_size;
    atomic_uint last_launch_grid_x;
    uint64_t last_image_hash;
    uint64_t last_image_size;
    atomic_int images_received;
    atomic_uint last_hello_pid;
    atomic_int parked;              /* 1: claim server_parked on every channel (doorbell mode) */
    uint64_t extra_features;        /* feature bits added to the header */
    uint32_t doorbell_vectors;      /* header doorbell_vectors */
    /* §8 host → guest: after publishing resp_seq/server_chunk, if guest_waiting == 1,
     * write interrupt_fds[channel % interrupt_count] (the guest's MSI-X eventfds) */
    int interrupt_fds[FAKE_CHANNELS];
    atomic_int interrupt_count;
    atomic_int interrupts_raised;
    atomic_int response_delay_us;   /* each response waits this long (lets the guest's spin phase end) */
    atomic_int primary_active;      /* cuDevicePrimaryCtxGetState's "active" (retain sets it) */
    atomic_int library_loads;       /* ivc_library_load requests */
    atomic_int topology_asks;       /* ivc_sm_topology requests */
    atomic_int attribute_value;     /* every function attribute's value, less 1024 (0: 1024) */
    atomic_int kernel_attribute_gets, kernel_attribute_sets; /* opcodes above fake.calls' 256 */
    atomic_int refuse_kernel_attribute_sets;                 /* answer them CUDA_ERROR_INVALID_VALUE */
    atomic_int is_capturing_asks, capturing; /* cuStreamIsCapturing requests; a capture runs */
    atomic_int per_context_asks;    /* cuKernelGetFunction and cuCtxGetLimit requests */
    atomic_int enumerate_calls;     /* ivc_library_enumerate_kernels requests */
    atomic_int name_calls;          /* ivc_function_name requests */
    atomic_uint last_launch_attrs;  /* ivc_launch_ex: attributes of the last one */
    atomic_int last_launch_attr_id; /* and its first attribute's id and first value word */
    atomic_int last_launch_attr_value;
    uint8_t link_image[65536];      /* ivc_link_add_data inputs, concatenated */
    uint64_t link_size;
    atomic_int link_destroys;
    atomic_int nvml_init_status;    /* ivc_nvml_init's NVML status (0: a device) */
    /* device printf (docs/kernels.md): text waiting for the process, read from output_read_pos
     * in pieces of at most output_piece bytes (0: the guest's capacity); output_dropped is said
     * with the next read; output_pending is set on every response while any of it remains */
    char device_output[8192];
    atomic_uint device_output_length;
    atomic_uint output_read_pos;
    atomic_uint output_piece;
    atomic_ullong output_dropped;
    atomic_int output_reads;
    /* JIT logs (docs/kernels.md): ivc_link_create's (option, value) pairs as received, and the
     * logs (0 info, 1 error) ivc_jit_log_read answers, with the wall time 2.5 ms */
    uint64_t link_options[32];
    atomic_uint link_option_pairs;
    char link_log[2][128];
    /* the last ivc_module_load / ivc_library_load's (option, value) pairs, and the logs
     * ivc_jit_log_read answers for link state 0 (the channel's last load) */
    uint64_t load_options[32];
    atomic_uint load_option_pairs;
    char load_log[2][128];
    atomic_ullong current_context;  /* cuCtxSetCurrent's last context (0: the primary context's) */
    /* graph memory nodes (section graphmem): requests seen, the last allocation node's scalars
     * (allocType, handleTypes, location type, location id, bytesize, descriptor bytes) and its first
     * descriptor, the last free node's address */
    atomic_int mem_node_calls;
    int64_t last_alloc[6];
    int32_t last_alloc_desc[3];
    uint64_t last_free_dptr;
};
/* the allocation node's address and node handle the fake server answers (kind 52: graph node) */
#define FAKE_GRAPH_ALLOC 0xD00100000ULL
#define FAKE_ALLOC_NODE 0x3400000100000011ULL
#define FAKE_FREE_NODE 0x3400000100000012ULL

extern struct fake_state fake;

/* Writes a READY header into a fresh region file at path and starts the server thread. */
void fake_server_start(const char *path);

/* A new region file under /tmp, the fake server started on it and IVCUDA_REGION pointing at it:
 * every test's first lines. The path stays valid for the process's life (unlink it at the end). */
const char *fake_region_start(void);
void fake_server_stop(void);
/* Holds requests (1: the serving thread answers none, the heartbeat goes on) or serves them again
 * (0). On return no answer is being written and, while held, none will be but fake_server_answer's. */
void fake_server_hold(int hold);
/* Answers channel i's pending request (and drains its ring) now, from the calling thread: what the
 * serving thread would have done; with requests held, the test chooses the moment. */
void fake_server_answer(int i);
/* What a cuda-server replacing its CUDA process does to the region (protocol §7): INIT, the
 * channel table wiped (and this server's record of it), epoch + 1, READY; hellos accepted again. */
void fake_server_restart(void);
/* The start of channel i in the served region. */
uint8_t *fake_channel(int i);
/* Writes a valid header (state READY) into base; used by the header-validation tests. */
void fake_write_header(uint8_t *base, uint64_t region_size);

#endif
