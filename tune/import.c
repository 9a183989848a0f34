/* tune/import.c: a tuning database from a GPU suite's CSV.
 *
 * GPU time is scarce, and the GPU suite (tests/gpu/suite.c, bench/) already
 * measured many schedules on real graphs. This reads such a CSV
 * (`graph,V,E,op,schedule,F,ok,rel_l2,median_ms,gbps,bound_fraction`, as
 * bench/results/2026-11-22-H100-gpu-suite1.csv, or gop_bench's, which has
 * those columns among others, in another order: the header names them)
 * into the tuning database,
 * with everything the predictor needs that the CSV lacks: each graph is
 * read from the datasets folder for its signature (and must have the
 * |V| and |E| the CSV says, else the row names another graph), each
 * operator is the stdlib's of that name (its IR hash and shape), and each
 * schedule is applied and lowered for its lowered facts.
 *
 * Rows that are not measurements are left out and counted: `default` (a
 * duplicate of a named point under another name), failed checks (ok 0:
 * a wrong kernel is never stored), and rows without a time (a check-only
 * run writes 0). A truncated last line (a run cut off) is left out with a
 * note; any other malformed line is an error naming it, and nothing is
 * imported.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "graph/graph.h"
#include "tune/tune.h"

enum { NCOLS = 40 }; /* the most columns a line may have */

/* The columns the import reads, by their header names. */
enum { C_GRAPH, C_V, C_E, C_OP, C_SCHEDULE, C_F, C_OK, C_MS, C_GBPS, C_FRAC, NNEED };
static const char *const need_names[NNEED] = {"graph", "V", "E", "op", "schedule", "F",
                                               "ok", "median_ms", "gbps", "bound_fraction"};

/* Splits a CSV line into at most NCOLS fields (double quotes group,
 * "" is a quote); returns the number of fields, or -1 for an unclosed
 * quote. Fields point into `line`, which is modified. */
static int split_csv(char *line, char **f) {
  int n = 0;
  char *p = line;
  for (;;) {
    if (n == NCOLS + 1) return n;
    char *out = p;
    f[n++] = p;
    if (*p == '"') {
      p++;
      for (;;) {
        if (!*p) return -1;
        if (*p == '"' && p[1] == '"') {
          *out++ = '"';
          p += 2;
        } else if (*p == '"') {
          p++;
          break;
        } else {
          *out++ = *p++;
        }
      }
      if (*p && *p != ',') return -1;
    } else {
      while (*p && *p != ',') *out++ = *p++;
    }
    bool more = *p == ',';
    *out = 0;
    if (!more) return n;
    p++;
  }
}

typedef struct GraphEntry {
  char name[256];
  Graph *g; /* NULL: could not be read (reported) */
  TuneGraphSig sig;
} GraphEntry;

static bool num(const char *s, double *out) {
  char *end;
  errno = 0;
  *out = strtod(s, &end);
  return *s && !*end && !errno && isfinite(*out);
}

int tune_import_csv(const char *csv, TuneDb *db, const IrModule *stdlib, const char *datasets,
                    const char *gpu, int cc, const char *compiler, Arena *a,
                    TuneImportInfo *info, Diag *d) {
  memset(info, 0, sizeof *info);
  FILE *f = fopen(csv, "r");
  if (!f) {
    ir_error(d, (Loc){csv, 0, 0}, "cannot open: %s", strerror(errno));
    return -1;
  }
  /* Read every line first: nothing is stored from a file with a bad line. */
  char **lines = NULL;
  int nlines = 0, cap = 0;
  bool last_unterminated = false;
  char *line = NULL;
  size_t lcap = 0;
  ssize_t len;
  while ((len = getline(&line, &lcap, f)) >= 0) {
    last_unterminated = len == 0 || line[len - 1] != '\n';
    while (len > 0 && (line[len - 1] == '\n' || line[len - 1] == '\r')) line[--len] = 0;
    if (nlines == cap) {
      char **more = realloc(lines, sizeof *more * (size_t)(cap = cap ? 2 * cap : 1024));
      if (!more) break;
      lines = more;
    }
    lines[nlines++] = ir_strdup(a, line);
  }
  free(line);
  fclose(f);
  int rc = 0, header = -1, ncols = 0, col[NNEED];
  GraphEntry graphs[64];
  int ngraphs = 0;
  typedef struct Parsed {
    int line;
    GraphEntry *graph;
    const IrOp *op;
    TunePoint p;
    int64_t F;
    double ms, gbps, frac;
  } Parsed;
  Parsed *rows = calloc((size_t)nlines + 1, sizeof *rows);
  int nrows = 0;
  for (int i = 0; i < nlines && rc == 0 && rows; i++) {
    Loc at = {csv, i + 1, 0};
    char *text = lines[i];
    if (!*text || *text == '#') continue;
    char *fl[NCOLS + 1];
    int nf = split_csv(text, fl);
    if (header < 0) {
      /* the columns by name: the suite's order or gop_bench's */
      int missing = -1;
      for (int c = 0; c < NNEED; c++) {
        col[c] = -1;
        for (int k = 0; k < nf && nf <= NCOLS; k++)
          if (strcmp(fl[k], need_names[c]) == 0) col[c] = k;
        if (col[c] < 0 && missing < 0) missing = c;
      }
      if (nf < 1 || nf > NCOLS || strcmp(fl[0], "graph") != 0) {
        ir_error(d, at, "not a GPU suite CSV (nor gop_bench's): the header must name the columns "
                 "graph (first), V, E, op, schedule, F, ok, median_ms, gbps and "
                 "bound_fraction");
        rc = -1;
      } else if (missing >= 0) {
        ir_error(d, at, "the header has no column '%s' (it needs graph, V, E, op, schedule, "
                 "F, ok, median_ms, gbps and bound_fraction)", need_names[missing]);
        rc = -1;
      }
      header = i;
      ncols = nf;
      continue;
    }
    if (nf != ncols) {
      if (i == nlines - 1 && last_unterminated) {
        ir_note(d, at, "the last line is cut off (a run stopped mid-write): left out");
        info->truncated++;
        continue;
      }
      ir_error(d, at, "expected %d comma-separated fields, found %d", ncols, nf < 0 ? 0 : nf);
      rc = -1;
      break;
    }
    double V, E, F, ok, ms, gbps, frac;
    const char *gname = fl[col[C_GRAPH]], *opname = fl[col[C_OP]], *sched = fl[col[C_SCHEDULE]];
    if (!num(fl[col[C_V]], &V) || !num(fl[col[C_E]], &E) || !num(fl[col[C_F]], &F) ||
        !num(fl[col[C_OK]], &ok) || !num(fl[col[C_MS]], &ms) || !num(fl[col[C_GBPS]], &gbps) ||
        !num(fl[col[C_FRAC]], &frac) || F < 0 || V < 1 || E < 0) {
      if (i == nlines - 1 && last_unterminated) {
        ir_note(d, at, "the last line is cut off (a run stopped mid-write): left out");
        info->truncated++;
        continue;
      }
      ir_error(d, at, "a field that must be a number is not (V, E, F, ok, median_ms, gbps or "
               "bound_fraction)");
      rc = -1;
      break;
    }
    if (strcmp(sched, "default") == 0) {
      info->skipped_default++;
      continue;
    }
    if (ok != 1) {
      info->skipped_wrong++;
      continue;
    }
    if (!(ms > 0)) {
      info->skipped_no_time++;
      continue;
    }
    const IrOp *op = ir_module_find_op(stdlib, opname);
    if (!op) {
      ir_error(d, at, "no stdlib operator named '%s'", opname);
      rc = -1;
      break;
    }
    GraphEntry *ge = NULL;
    for (int k = 0; k < ngraphs && !ge; k++)
      if (strcmp(graphs[k].name, gname) == 0) ge = &graphs[k];
    if (!ge) {
      if (ngraphs == 64 || strlen(gname) >= sizeof graphs[0].name) {
        ir_error(d, at, "too many graphs, or a graph name too long");
        rc = -1;
        break;
      }
      ge = &graphs[ngraphs++];
      memset(ge, 0, sizeof *ge);
      snprintf(ge->name, sizeof ge->name, "%s", gname);
      /* the file as named (the suite's), else gop_bench's name of it
       * (cnr-2000 for cnr-2000.mtx.gz), else a generator (rmat:14:8) */
      const char *tries[] = {ir_sprintf(a, "%s/%s", datasets, gname),
                             ir_sprintf(a, "%s/%s.mtx.gz", datasets, gname),
                             ir_sprintf(a, "%s/%s.mtx", datasets, gname), gname};
      const char *path = tries[0];
      for (int t = 1; t < 4 && access(path, R_OK) != 0; t++) path = tries[t];
      ge->g = graph_open(path, d);
      if (!ge->g) {
        ir_error(d, at, "cannot read graph %s for its signature (give the folder with "
                 "--datasets)", gname);
        rc = -1;
        break;
      }
      tune_graph_sig(ge->g, &ge->sig);
      info->graphs++;
    }
    if ((double)ge->g->nv != V || (double)ge->g->ne != E) {
      ir_error(d, at, "graph %s in %s has |V| %lld and |E| %lld, but the row says %.0f and "
               "%.0f: another graph of that name", gname, datasets, (long long)ge->g->nv,
               (long long)ge->g->ne, V, E);
      rc = -1;
      break;
    }
    Parsed *r = &rows[nrows];
    Diag why;
    ir_diag_init(&why, NULL);
    int made = tune_point_make(op, stdlib, sched, a, &r->p, &why);
    if (made != 0) {
      const char *reason;
      int len = ir_diag_reason(&why, &reason);
      ir_warning(d, at, "schedule %s of %s is %s today; row left out: %.*s", sched, opname,
                 made > 0 ? "refused" : "unknown", len, reason);
      ir_diag_free(&why);
      info->skipped_refused++;
      continue;
    }
    ir_diag_free(&why);
    r->line = i + 1;
    r->graph = ge;
    r->op = op;
    r->F = (int64_t)F;
    r->ms = ms;
    r->gbps = gbps;
    r->frac = frac;
    nrows++;
  }
  if (header < 0 && rc == 0) {
    ir_error(d, (Loc){csv, 0, 0}, "the file is empty: no header line");
    rc = -1;
  }
  for (int i = 0; i < nrows && rc == 0; i++) {
    Parsed *r = &rows[i];
    TuneOpShape shape;
    tune_op_shape(r->op, &shape);
    TuneKey k = {.op_hash = tune_op_hash(r->op),
                 .F = shape.feature_loop ? r->F : 0,
                 .dtype = "f32",
                 .graph = r->graph->sig,
                 .gpu = gpu,
                 .cc = cc,
                 .compiler = compiler,
                 .op_name = r->op->name,
                 .shape = &shape};
    TuneRecord rec = {.time_ms = r->ms, .gbps = r->gbps, .bound_fraction = r->frac,
                      .have_facts = true, .atomic_rows = r->p.atomic_rows,
                      .atomic_scalars = r->p.atomic_scalars, .kernels = r->p.kernels,
                      .warp = r->p.warp, .vertex = r->p.vertex};
    snprintf(rec.schedule, sizeof rec.schedule, "%s", r->p.text);
    if (tune_db_put(db, &k, &rec, d) != 0) {
      rc = -1;
      break;
    }
    info->imported++;
  }
  for (int k = 0; k < ngraphs; k++) graph_free(graphs[k].g);
  free(rows);
  free(lines);
  return rc;
}
