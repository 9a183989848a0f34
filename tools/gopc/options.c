/* tools/gopc/options.c: the option parser every subcommand uses. A
 * subcommand hands it a GopcArgs (its table of options, where positional
 * arguments go, its usage); gopc_parse reads argv left to right, fills the
 * destinations, and on the first bad argument prints the usage error and
 * returns 2. What one command does differently (ops's positional rules,
 * run's and tune's extents given as --NAME N, tune's --import-csv list)
 * is a hook in its GopcArgs, not a case here.
 */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gopc.h"

int gopc_usage_error(const GopcArgs *a, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  fputs(a->prefix, stderr);
  vfprintf(stderr, fmt, ap);
  fprintf(stderr, "\n\n%s", a->usage);
  va_end(ap);
  return GOPC_EXIT_USAGE;
}

bool gopc_parse_i64(const char *s, int64_t *out) {
  errno = 0;
  char *end;
  long long v = strtoll(s, &end, 10);
  if (errno || end == s || *end) return false;
  *out = v;
  return true;
}

static bool is_help(const char *arg) {
  return strcmp(arg, "--help") == 0 || strcmp(arg, "-h") == 0;
}

static const GopcOption *find(const GopcArgs *a, const char *flag) {
  for (const GopcOption *o = a->options; o && o->flag; o++)
    if (strcmp(o->flag, flag) == 0) return o;
  return NULL;
}

/* A positional argument; `n` counts those taken so far. */
static int positional(const GopcArgs *a, char *arg, int *n) {
  if (a->arg) return a->arg(a, arg);
  if (*n >= a->max_args) return gopc_usage_error(a, "unexpected argument %s", arg);
  a->args[(*n)++] = arg;
  if (a->nargs) *a->nargs = *n;
  return 0;
}

/* An option that takes a value, given `v`. */
static int take_value(const GopcArgs *a, const GopcOption *o, char *v) {
  switch (o->kind) {
  case GOPC_STRING:
    *(const char **)o->dest = v;
    return 0;
  case GOPC_INT: {
    int64_t n;
    if (!gopc_parse_i64(v, &n) || n < o->min || n > o->max)
      return gopc_usage_error(a, o->bad, o->flag, v);
    *(int64_t *)o->dest = n;
    return 0;
  }
  case GOPC_DOUBLE: {
    char *end;
    errno = 0;
    double x = strtod(v, &end);
    if (errno || end == v || *end || !(x > (double)o->min) || x > (double)o->max)
      return gopc_usage_error(a, o->bad, o->flag, v);
    *(double *)o->dest = x;
    return 0;
  }
  case GOPC_ASSIGN: {
    GopcAssigns *list = o->dest;
    if (list->n >= o->max) return gopc_usage_error(a, o->full, o->flag);
    char *eq = strchr(v, '=');
    if (!eq || eq == v || !eq[1]) return gopc_usage_error(a, o->bad, o->flag, v);
    *eq = 0; /* argv is ours to split */
    list->item[list->n++] = (GopcAssign){o->flag, v, eq + 1, false};
    return 0;
  }
  case GOPC_BOOL:
  case GOPC_CONST:
  case GOPC_HOOK:
    break; /* these take no value: gopc_parse handles them */
  }
  return 0;
}

int gopc_parse(const GopcArgs *a, int argc, char **argv) {
  int npos = 0;
  for (int i = 0; i < argc; i++) {
    char *arg = argv[i];
    int rc = 0;
    if (is_help(arg) && (i == 0 || !a->no_options)) {
      fputs(a->usage, stdout);
      return 0;
    } else if (arg[0] != '-' || a->no_options) {
      rc = positional(a, arg, &npos);
    } else {
      const GopcOption *o = find(a, arg);
      if (o && o->seen) *o->seen = true;
      if (o && o->kind == GOPC_BOOL) {
        *(bool *)o->dest = true;
      } else if (o && o->kind == GOPC_CONST) {
        int *dest = o->dest;
        if (o->bad && *dest != 0 && *dest != o->value)
          return gopc_usage_error(a, o->bad, o->flag, "");
        *dest = o->value;
      } else if (o && o->kind == GOPC_HOOK) {
        rc = o->hook(a, argc, argv, &i);
      } else if (!o && !a->other) {
        return gopc_usage_error(a, "unknown option %s", arg);
      } else if (i + 1 >= argc) {
        return gopc_usage_error(a, "%s needs a value", arg);
      } else {
        char *v = argv[++i];
        rc = o ? take_value(a, o, v) : a->other(a, arg, v);
      }
    }
    if (rc != 0) return rc;
  }
  return GOPC_GO_ON;
}

int64_t gopc_row_width(const GopcAssigns *dims) {
  int64_t F = 0;
  for (int i = 0; i < dims->n; i++) {
    int64_t n = 0;
    if (gopc_parse_i64(dims->item[i].value, &n) && n > 0 && n <= INT32_MAX)
      F = !F ? n : F > INT32_MAX / n ? INT32_MAX : F * n;
  }
  return F;
}
