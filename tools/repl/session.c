/* tools/repl/session.c: the session's state and how commands report, and
 * the commands that choose what to explore: load and use pick an operator,
 * graph a graph, set the extents and settings, save writes the schedule
 * out, quit leaves. Errors go through repl_error, which marks the command
 * failed: gop's exit status in scripts.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "repl.h"

ReplSession repl;

/* ---- output ---- */

void repl_error(const char *fmt, ...) {
  fflush(stdout);
  va_list ap;
  va_start(ap, fmt);
  fputs("error: ", stderr);
  vfprintf(stderr, fmt, ap);
  fputc('\n', stderr);
  va_end(ap);
  repl.failed = true;
}

void repl_api_failed(void) {
  fflush(stderr);
  repl.failed = true;
}

char *repl_strdup(const char *s) {
  char *c = strdup(s ? s : "");
  if (!c) {
    fputs("gop: out of memory\n", stderr);
    exit(1);
  }
  return c;
}

bool repl_need_op(void) {
  if (repl.op) return true;
  repl_error("no operator selected: `use OP` (see `ops`), or `load FILE.gop` first");
  return false;
}

bool repl_need_graph(void) {
  if (repl.graph) return true;
  repl_error("no graph loaded: `graph FILE`, `graph rmat:8:4` or `graph grid:8x8` first");
  return false;
}

/* ---- operators and graphs ---- */

static void select_op(GopOp *op) {
  repl.op = op;
  repl_clear_schedule();
  printf("using %s\n", gop_op_signature(op));
}

void repl_cmd_load(int argc, char **argv, const char *rest) {
  if (argc != 2) {
    repl_error("usage: load FILE.gop");
    return;
  }
  GopModule *m = gop_compile_file(repl.ctx, argv[1]);
  if (!m) {
    repl_api_failed();
    return;
  }
  repl.module = m;
  free(repl.module_path);
  repl.module_path = repl_strdup(argv[1]);
  int n = gop_module_num_ops(m);
  printf("loaded %s: %d operator%s\n", argv[1], n, n == 1 ? "" : "s");
  if (n == 1) select_op(gop_module_op(m, 0));
  else if (n > 1) printf("choose one with `use OP` (see `ops`)\n");
  else if (repl.op) printf("still using %s\n", gop_op_name(repl.op));
}

void repl_cmd_use(int argc, char **argv, const char *rest) {
  if (argc != 2) {
    repl_error("usage: use OP (see `ops`)");
    return;
  }
  const char *name = argv[1];
  bool std_only = strncmp(name, "stdlib:", 7) == 0;
  if (std_only) name += 7;
  GopOp *op = NULL;
  /* The loaded file's operators hide the stdlib's of the same name. */
  if (repl.module && !std_only)
    for (int i = 0; i < gop_module_num_ops(repl.module) && !op; i++)
      if (strcmp(gop_op_name(gop_module_op(repl.module, i)), name) == 0)
        op = gop_module_op(repl.module, i);
  if (!op) {
    GopModule *std = gop_stdlib(repl.ctx);
    op = std ? gop_module_find_op(std, name) : NULL;
  }
  if (!op) {
    repl_api_failed();
    return;
  }
  select_op(op);
}

void repl_cmd_ops(int argc, char **argv, const char *rest) {
  if (argc != 1) {
    repl_error("usage: ops");
    return;
  }
  if (repl.module) {
    printf("%s:\n", repl.module_path);
    if (gop_module_num_ops(repl.module) == 0) printf("  (no operators)\n");
    for (int i = 0; i < gop_module_num_ops(repl.module); i++)
      printf("  %s\n", gop_op_signature(gop_module_op(repl.module, i)));
  }
  GopModule *std = gop_stdlib(repl.ctx);
  printf("stdlib:\n");
  for (int i = 0; std && i < gop_module_num_ops(std); i++)
    printf("  %s\n", gop_op_signature(gop_module_op(std, i)));
}

void repl_cmd_graph(int argc, char **argv, const char *rest) {
  if (argc != 2) {
    repl_error("usage: graph FILE|rmat:SCALE:EDGEFACTOR[:SEED]|grid:WxH");
    return;
  }
  GopGraph *g = gop_graph_open(repl.ctx, argv[1]);
  if (!g) {
    repl_api_failed();
    return;
  }
  repl.graph = g;
  free(repl.graph_spec);
  repl.graph_spec = repl_strdup(argv[1]);
  gop_graph_print(g, stdout);
}

/* ---- settings ---- */

static bool parse_i64(const char *s, int64_t *out) {
  errno = 0;
  char *end;
  long long v = strtoll(s, &end, 10);
  if (errno || end == s || *end) return false;
  *out = v;
  return true;
}

void repl_cmd_set(int argc, char **argv, const char *rest) {
  if (argc == 1) {
    printf("timing %s\n", repl.timing ? "on" : "off");
    for (int i = 0; i < repl.next; i++)
      printf("%s %" PRId64 "\n", repl.ext[i].name, repl.ext[i].value);
    return;
  }
  if (argc != 3) {
    repl_error("usage: set NAME VALUE (an extent, e.g. `set F 64`) or set timing on|off");
    return;
  }
  if (strcmp(argv[1], "timing") == 0) {
    if (strcmp(argv[2], "on") != 0 && strcmp(argv[2], "off") != 0) {
      repl_error("set timing: on or off, not '%s'", argv[2]);
      return;
    }
    repl.timing = argv[2][1] == 'n';
    return;
  }
  int64_t v;
  if (!parse_i64(argv[2], &v) || v < 1 || v > (1 << 24)) {
    repl_error("set %s: '%s' is not an extent from 1 to 16777216", argv[1], argv[2]);
    return;
  }
  if (strlen(argv[1]) >= sizeof repl.ext[0].name) {
    repl_error("set: the name '%s' is too long", argv[1]);
    return;
  }
  int i = 0;
  while (i < repl.next && strcmp(repl.ext[i].name, argv[1]) != 0) i++;
  if (i == repl.next) {
    if (repl.next == REPL_MAX_EXTENTS) {
      repl_error("set: too many extents (%d)", REPL_MAX_EXTENTS);
      return;
    }
    snprintf(repl.ext[repl.next++].name, sizeof repl.ext[0].name, "%s", argv[1]);
  }
  repl.ext[i].value = v;
}

/* ---- save, quit ---- */

void repl_cmd_save(int argc, char **argv, const char *rest) {
  if (argc < 2 || argc > 3) {
    repl_error("usage: save FILE.gop [NAME]");
    return;
  }
  if (!repl_need_op()) return;
  if (!*repl.sched) {
    repl_error("save: the schedule is empty: apply a primitive first");
    return;
  }
  const char *name = argc == 3 ? argv[2] : "explored";
  if (gop_save_schedule(repl.ctx, argv[1], name, repl.sched) != 0) {
    repl_api_failed();
    return;
  }
  printf("saved schedule %s() to %s\n", name, argv[1]);
}

void repl_cmd_quit(int argc, char **argv, const char *rest) {
  repl.quit = true;
}
