/* How each export table is handed out: CUDA_TRACE_TABLES, a comma-separated list of
 * rules `<uuid prefix>:<mode>[@word[+word...]]`, the prefix in hex or `*` for every table;
 * the last rule that matches a table decides. Without a matching rule the older settings
 * decide: CUDA_TRACE_COPY_TABLES=0 or a CUDA_TRACE_NOCOPY prefix hands the table out as it
 * is, else it is copied with logging stubs. The modes exist to find out what cudart's
 * integrity check covers (gpu/integrity-probe.sh): which tables, their addresses or their
 * words. README.md describes them. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "trace.h"

#define MAX_RULES 64

struct rule {
    char prefix[33]; /* "" = every table */
    struct table_choice choice;
};

static struct rule rules[MAX_RULES];
static int rule_count;

static const struct {
    const char *name;
    enum table_mode mode;
} names[] = {
    { "real", MODE_REAL },       { "deep", MODE_DEEP },     { "shallow", MODE_SHALLOW },
    { "inplace", MODE_INPLACE }, { "anon", MODE_ANON },     { "mirror", MODE_MIRROR },
    { "mirror-exact", MODE_MIRROR_EXACT },                  { "refuse", MODE_REFUSE },
};

const char *trace_mode_name(enum table_mode mode)
{
    for (size_t i = 0; i < sizeof names / sizeof names[0]; i++)
        if (names[i].mode == mode) return names[i].name;
    return "?";
}

static int parse_rule(const char *text, size_t len, struct rule *r)
{
    char buf[128];
    if (len >= sizeof buf) return -1;
    memcpy(buf, text, len);
    buf[len] = 0;
    char *colon = strchr(buf, ':');
    if (!colon) return -1;
    *colon = 0;
    const char *prefix = buf, *mode = colon + 1;
    if (strcmp(prefix, "*") == 0) {
        r->prefix[0] = 0;
    } else {
        size_t n = strlen(prefix);
        if (n == 0 || n > 32 || strspn(prefix, "0123456789abcdefABCDEF") != n) return -1;
        memcpy(r->prefix, prefix, n + 1);
    }
    char *at = strchr(mode, '@');
    memset(&r->choice, 0, sizeof r->choice);
    if (at) {
        *at = 0;
        for (char *w = at + 1; *w;) {
            char *end;
            unsigned long word = strtoul(w, &end, 10);
            if (end == w || word >= 128) return -1;
            r->choice.words[word / 64] |= 1ull << (word % 64);
            w = *end == '+' ? end + 1 : end;
            if (*end && *end != '+') return -1;
        }
    }
    for (size_t i = 0; i < sizeof names / sizeof names[0]; i++) {
        if (strcmp(mode, names[i].name) == 0) {
            r->choice.mode = names[i].mode;
            if (at && r->choice.mode != MODE_INPLACE && r->choice.mode != MODE_ANON) return -1;
            return 0;
        }
    }
    return -1;
}

/* 0, or -1 after saying on stderr which rule is wrong (every rule before it applies). */
int trace_modes_parse(const char *spec)
{
    rule_count = 0;
    while (spec && *spec) {
        size_t n = strcspn(spec, ",");
        if (n > 0) {
            if (rule_count == MAX_RULES || parse_rule(spec, n, &rules[rule_count]) != 0) {
                fprintf(stderr, "cuda-trace: CUDA_TRACE_TABLES: cannot use the rule '%.*s' (or more than %d rules)\n",
                        (int)n, spec, MAX_RULES);
                return -1;
            }
            rule_count++;
        }
        spec += n;
        if (*spec == ',') spec++;
    }
    return 0;
}

/* Whether CUDA_TRACE_NOCOPY names this table (a prefix of its UUID in hex, any case). */
static int excluded(const char *uuid_hex)
{
    const char *list = trace_cfg.nocopy;
    while (list && *list) {
        size_t n = strcspn(list, ",");
        if (n > 0 && n <= 32 && strncasecmp(list, uuid_hex, n) == 0) return 1;
        list += n;
        if (*list == ',') list++;
    }
    return 0;
}

struct table_choice trace_table_choice(const char *uuid_hex)
{
    struct table_choice c = { MODE_DEEP, { 0, 0 } };
    if (!trace_cfg.copy_tables || excluded(uuid_hex)) c.mode = MODE_REAL;
    for (int i = 0; i < rule_count; i++) {
        size_t n = strlen(rules[i].prefix);
        if (n == 0 || strncasecmp(rules[i].prefix, uuid_hex, n) == 0) c = rules[i].choice;
    }
    return c;
}

int trace_choice_has_word(const struct table_choice *c, unsigned word)
{
    if (c->words[0] == 0 && c->words[1] == 0) return 1;
    return word < 128 && (c->words[word / 64] >> (word % 64) & 1);
}

int trace_modes_mention_mirror(void)
{
    for (int i = 0; i < rule_count; i++)
        if (rules[i].choice.mode == MODE_MIRROR || rules[i].choice.mode == MODE_MIRROR_EXACT) return 1;
    return 0;
}
