/* The process-wide answer cache of `cached` functions: (opcode, request payload) →
 * response payload of a successful call. Entries live until the process forks (the
 * child starts empty); answers are device facts that do not change while it runs. */
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "cache.h"
#include "hash.h"

#define BUCKETS 1024

struct entry {
    struct entry *next;
    uint32_t opcode;
    size_t key_length;
    size_t value_length;
    uint8_t bytes[]; /* key, then value */
};

static pthread_rwlock_t lock = PTHREAD_RWLOCK_INITIALIZER;
static struct entry *buckets[BUCKETS];

static size_t bucket(uint32_t opcode, const uint8_t *key, size_t key_length)
{
    uint64_t h = ivc_fnv1a64(key, key_length) ^ ((uint64_t)opcode * 0x9e3779b97f4a7c15ULL);
    return (size_t)(h % BUCKETS);
}

static struct entry *find_locked(uint32_t opcode, const uint8_t *key, size_t key_length, size_t b)
{
    for (struct entry *e = buckets[b]; e != NULL; e = e->next)
        if (e->opcode == opcode && e->key_length == key_length && memcmp(e->bytes, key, key_length) == 0)
            return e;
    return NULL;
}

const uint8_t *ivc_cache_find(uint32_t opcode, const uint8_t *key, size_t key_length, size_t *value_length)
{
    size_t b = bucket(opcode, key, key_length);
    pthread_rwlock_rdlock(&lock);
    struct entry *e = find_locked(opcode, key, key_length, b);
    pthread_rwlock_unlock(&lock);
    if (e == NULL)
        return NULL;
    *value_length = e->value_length;
    return e->bytes + e->key_length;
}

void ivc_cache_put(uint32_t opcode, const uint8_t *key, size_t key_length, const uint8_t *value,
                   size_t value_length)
{
    size_t b = bucket(opcode, key, key_length);
    struct entry *e = malloc(sizeof *e + key_length + value_length);
    if (e == NULL)
        return;
    e->opcode = opcode;
    e->key_length = key_length;
    e->value_length = value_length;
    memcpy(e->bytes, key, key_length);
    memcpy(e->bytes + key_length, value, value_length);
    pthread_rwlock_wrlock(&lock);
    if (find_locked(opcode, key, key_length, b) != NULL) {
        free(e);
    } else {
        e->next = buckets[b];
        buckets[b] = e;
    }
    pthread_rwlock_unlock(&lock);
}

/* Only called in a forked child, where no other thread can hold a reference. */
void ivc_cache_clear(void)
{
    pthread_rwlock_t fresh = PTHREAD_RWLOCK_INITIALIZER;
    lock = fresh;
    for (size_t b = 0; b < BUCKETS; b++) {
        while (buckets[b] != NULL) {
            struct entry *next = buckets[b]->next;
            free(buckets[b]);
            buckets[b] = next;
        }
    }
}
