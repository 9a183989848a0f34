/* ir/limits.c: how much an input may ask of gop.
 *
 * Every reader checks what its input asks for (a source's length and
 * nesting, a schedule's directives and the IR they make, a graph's or an
 * array's declared size, a kernel pack's sections) against one of these
 * limits *before* allocating or looping, and refuses with a message that
 * names the limit and the environment variable that sets it. The defaults
 * are far above anything a real operator, schedule or data set needs and
 * far below what would exhaust a machine; README.md ("Limits") lists them.
 *
 * A limit is read from its environment variable each time it is checked,
 * so there is no hidden state to reset: `GOP_MAX_NESTING=512 gopc ...`.
 * The host-memory limit defaults to the machine's physical memory.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <unistd.h>

#include "ir.h"

typedef struct LimitInfo {
  const char *env;
  int64_t fallback; /* 0: computed (host memory) */
  const char *unit;
} LimitInfo;

static const LimitInfo limits[IR_LIMIT_COUNT] = {
    [IR_LIMIT_SOURCE_BYTES] = {"GOP_MAX_SOURCE_BYTES", 16 << 20, "bytes"},
    [IR_LIMIT_NESTING] = {"GOP_MAX_NESTING", 256, "levels"},
    [IR_LIMIT_DIRECTIVES] = {"GOP_MAX_DIRECTIVES", 1000, "directives"},
    [IR_LIMIT_IR_NODES] = {"GOP_MAX_IR_NODES", 50000, "nodes"},
    [IR_LIMIT_LOOP_TRIPS] = {"GOP_MAX_LOOP_TRIPS", 1 << 24, "iterations"},
    [IR_LIMIT_HOST_BYTES] = {"GOP_MAX_HOST_BYTES", 0, "bytes"},
};

static int64_t host_memory(void) {
  long pages = sysconf(_SC_PHYS_PAGES), size = sysconf(_SC_PAGE_SIZE);
  if (pages <= 0 || size <= 0) return INT64_C(1) << 34; /* unknown: 16 GiB */
  return (int64_t)pages * size;
}

/* The value of limit `l`; -1 if its environment variable is set but not a
 * positive integer. */
static int64_t value_of(IrLimit l) {
  const char *s = getenv(limits[l].env);
  if (s && *s) {
    char *end;
    errno = 0;
    long long v = strtoll(s, &end, 10);
    return errno || *end || v <= 0 ? -1 : (int64_t)v;
  }
  return limits[l].fallback ? limits[l].fallback : host_memory();
}

int64_t ir_limit(IrLimit l) {
  int64_t v = value_of(l);
  return v > 0 ? v : limits[l].fallback ? limits[l].fallback : host_memory();
}

const char *ir_limit_env(IrLimit l) { return limits[l].env; }

bool ir_limit_check(IrLimit l, int64_t asked, Diag *d, Loc loc, const char *what) {
  int64_t v = value_of(l);
  if (v < 0) {
    ir_error(d, loc, "%s=%s: not a positive integer", limits[l].env, getenv(limits[l].env));
    return false;
  }
  if (asked >= 0 && asked <= v) return true;
  if (asked < 0)
    ir_error(d, loc, "%s: more than %" PRId64 " %s, the limit (set %s to change it)", what,
             v, limits[l].unit, limits[l].env);
  else
    ir_error(d, loc, "%s: %" PRId64 " %s, over the limit of %" PRId64 " (set %s to change it)",
             what, asked, limits[l].unit, v, limits[l].env);
  return false;
}

int64_t ir_bytes_of(int64_t count, int64_t size) {
  if (count < 0 || size < 0) return -1;
  if (size && count > INT64_MAX / size) return -1;
  return count * size;
}
