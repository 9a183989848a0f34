/* tune/trees.c: the learned predictor's model, read, written and evaluated
 * by gop itself.
 *
 * XGBoost (tune/predict.c, through xgb.c) trains the trees; once trained
 * they are plain data: each node a split (feature < threshold goes to
 * `yes`, else `no`, a missing value to `missing`) or a leaf, a prediction
 * the sum of one leaf per tree. Keeping them in our own text format means
 * that choosing a schedule needs no libxgboost: a model trained on any
 * machine, or the one built into the library (tune/builtin.model, embedded
 * by the build), ranks candidates wherever gop runs: the wheel, the static
 * GPU build.
 *
 * The file is an envelope of ours (format version, the number of features
 * and a hash of their names, the payload's length and FNV-1a checksum)
 * around a payload of lines:
 *
 *   base B                       the prediction before any tree
 *   shape ER ERR ES VR VS FL OR DT  an operator shape and dtype trained on
 *                                (any number of these lines; the chooser uses
 *                                the model only for operators of these
 *                                shapes: OR counts max=/min= stores)
 *   point CASES TEXT             a schedule point (its text, "spmm_groups(64,
 *                                4)") and the number of cases it was
 *                                measured in (any number of these lines,
 *                                optional: a model without them, as trained
 *                                before they were kept, ranks every point)
 *   trees N
 *   tree M                       then M nodes, numbered 0.. in order:
 *   leaf V                         a leaf
 *   FEATURE THRESHOLD YES NO MISSING   a split; its children come after it
 *
 * A child must come after its node, so a walk always ends; every count and
 * index is checked, and a file that fails any check is refused with the
 * line and the reason before anything is used.
 */
#define _GNU_SOURCE
#include <ctype.h>
#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "runtime/runtime.h"
#include "tune/tune.h"

typedef struct TreeNode {
  int32_t feature; /* < 0: a leaf */
  int32_t yes, no, missing;
  float value; /* the threshold, or the leaf's value */
} TreeNode;

struct TunePredictor {
  float base;
  int ntrees, nnodes, capnodes;
  int32_t *root; /* tree t's nodes are node[root[t] .. root[t + 1]) */
  TreeNode *node;
  int nshapes;
  TuneShapeKey *shape;
  bool lists_points; /* the model lists the points it was trained on */
  int npoints;
  TuneKnownPoint *point;
};

enum { MAX_TREES = 100000, MAX_TREE_NODES = 1 << 20, MAX_SHAPES = 4096, MAX_POINTS = 4096 };

TunePredictor *tune_predictor_new(void) { return calloc(1, sizeof(TunePredictor)); }

void tune_predictor_free(TunePredictor *p) {
  if (!p) return;
  free(p->root);
  free(p->node);
  free(p->shape);
  free(p->point);
  free(p);
}

void tune_predictor_set_base(TunePredictor *p, float base) { p->base = base; }

static float tree_value(const TreeNode *n, const float *x) {
  int i = 0;
  while (n[i].feature >= 0) {
    float v = x[n[i].feature];
    i = isnan(v) ? n[i].missing : v < n[i].value ? n[i].yes : n[i].no;
  }
  return n[i].value;
}

/* `start` plus one leaf a tree, added in the trees' order as XGBoost adds
 * them. */
static float add_leaves(const TunePredictor *p, const float *x, float start) {
  float s = start;
  for (int t = 0; t < p->ntrees; t++) s += tree_value(p->node + p->root[t], x);
  return s;
}

float tune_predictor_leaves(const TunePredictor *p, const float *x) {
  return add_leaves(p, x, 0);
}

int tune_predictor_predict(const TunePredictor *p, const float *x, int n, float *out) {
  for (int i = 0; i < n; i++) out[i] = add_leaves(p, x + (size_t)i * TUNE_NFEATURES, p->base);
  return 0;
}

int tune_predictor_trees(const TunePredictor *p) { return p->ntrees; }

/* ---- building ---- */

static int begin_tree(TunePredictor *p) {
  if (p->ntrees >= MAX_TREES) return -1;
  int32_t *r = realloc(p->root, sizeof *r * (size_t)(p->ntrees + 2));
  if (!r) return -1;
  p->root = r;
  p->root[p->ntrees++] = p->nnodes;
  p->root[p->ntrees] = p->nnodes;
  return 0;
}

static TreeNode *add_node(TunePredictor *p) {
  if (p->nnodes == p->capnodes) {
    int cap = p->capnodes ? 2 * p->capnodes : 1024;
    TreeNode *more = realloc(p->node, sizeof *more * (size_t)cap);
    if (!more) return NULL;
    p->node = more;
    p->capnodes = cap;
  }
  p->root[p->ntrees] = p->nnodes + 1;
  return &p->node[p->nnodes++];
}

int tune_predictor_add_shape(TunePredictor *p, const TuneShapeKey *k) {
  if (tune_predictor_has_shape(p, k)) return 0;
  if (p->nshapes >= MAX_SHAPES) return -1;
  TuneShapeKey *more = realloc(p->shape, sizeof *more * (size_t)(p->nshapes + 1));
  if (!more) return -1;
  p->shape = more;
  p->shape[p->nshapes++] = *k;
  return 0;
}

bool tune_predictor_has_shape(const TunePredictor *p, const TuneShapeKey *k) {
  for (int i = 0; i < p->nshapes; i++)
    if (memcmp(p->shape[i].count, k->count, sizeof k->count) == 0 &&
        strcmp(p->shape[i].dtype, k->dtype) == 0)
      return true;
  return false;
}

int tune_predictor_add_point(TunePredictor *p, const char *text, int cases) {
  p->lists_points = true;
  text = tune_point_core(text);
  if (strlen(text) >= sizeof p->point[0].text || cases < 0) return -1;
  for (int i = 0; i < p->npoints; i++)
    if (strcmp(p->point[i].text, text) == 0) {
      p->point[i].cases = cases;
      return 0;
    }
  if (p->npoints >= MAX_POINTS) return -1;
  TuneKnownPoint *more = realloc(p->point, sizeof *more * (size_t)(p->npoints + 1));
  if (!more) return -1;
  p->point = more;
  snprintf(more[p->npoints].text, sizeof more[p->npoints].text, "%s", text);
  more[p->npoints++].cases = cases;
  return 0;
}

int tune_predictor_point_cases(const TunePredictor *p, const char *text) {
  if (!p->lists_points) return -1;
  text = tune_point_core(text);
  for (int i = 0; i < p->npoints; i++)
    if (strcmp(p->point[i].text, text) == 0) return p->point[i].cases;
  return 0;
}

void tune_shape_key(const TuneOpShape *s, const char *dtype, TuneShapeKey *out) {
  memset(out, 0, sizeof *out);
  int v[TUNE_SHAPE_COUNTS] = {s->edge_rows,      s->edge_red_rows,  s->edge_scalars,
                              s->vertex_rows,    s->vertex_scalars, s->feature_loop,
                              s->order_reductions};
  memcpy(out->count, v, sizeof v);
  snprintf(out->dtype, sizeof out->dtype, "%s", dtype && *dtype ? dtype : "f32");
}

/* One tree of XGBoost's text dump ("0:[f27<-0.5] yes=1,no=2,missing=1",
 * "\t1:leaf=0.25", ...; a node's children are dumped after it). Node ids
 * are renumbered in the dump's order. */
int tune_predictor_add_dump_tree(TunePredictor *p, const char *text, Diag *d) {
  Loc at = {"xgboost dump", 0, 0};
  typedef struct {
    int id, feature, yes, no, missing;
    float value;
  } Raw;
  int n = 0, cap = 0, maxid = -1;
  Raw *raw = NULL;
  const char *s = text;
  int rc = 0;
  while (*s && rc == 0) {
    while (*s && isspace((unsigned char)*s)) s++;
    if (!*s) break;
    const char *eol = strchr(s, '\n');
    size_t len = eol ? (size_t)(eol - s) : strlen(s);
    char line[256];
    if (len >= sizeof line) len = sizeof line - 1;
    memcpy(line, s, len);
    line[len] = 0;
    s = eol ? eol + 1 : s + len;
    Raw r = {.feature = -1};
    int used = 0;
    if (sscanf(line, "%d:leaf=%g%n", &r.id, &r.value, &used) == 2 && used == (int)len) {
    } else if (sscanf(line, "%d:[f%d<%g] yes=%d,no=%d,missing=%d%n", &r.id, &r.feature, &r.value,
                      &r.yes, &r.no, &r.missing, &used) == 6 &&
               used == (int)len) {
    } else {
      ir_error(d, at, "cannot read the node '%s' of XGBoost's dump", line);
      rc = -1;
      break;
    }
    if (r.id < 0 || r.id >= MAX_TREE_NODES || r.feature >= TUNE_NFEATURES) {
      ir_error(d, at, "node '%s' of XGBoost's dump is out of range", line);
      rc = -1;
      break;
    }
    if (n == cap) {
      Raw *more = realloc(raw, sizeof *more * (size_t)(cap = cap ? 2 * cap : 256));
      if (!more) {
        rc = -1;
        break;
      }
      raw = more;
    }
    raw[n++] = r;
    if (r.id > maxid) maxid = r.id;
  }
  int *pos = rc == 0 && n > 0 ? malloc(sizeof *pos * (size_t)(maxid + 1)) : NULL;
  if (rc == 0 && !pos) {
    if (n == 0) ir_error(d, at, "an empty tree in XGBoost's dump");
    rc = -1;
  }
  if (rc == 0) {
    for (int i = 0; i <= maxid; i++) pos[i] = -1;
    for (int i = 0; i < n; i++) pos[raw[i].id] = i;
    rc = begin_tree(p);
  }
  for (int i = 0; i < n && rc == 0; i++) {
    TreeNode *t = add_node(p);
    if (!t) {
      rc = -1;
      break;
    }
    t->feature = raw[i].feature;
    t->value = raw[i].value;
    if (t->feature < 0) continue;
    int c[3] = {raw[i].yes, raw[i].no, raw[i].missing};
    for (int k = 0; k < 3; k++) {
      int q = c[k] >= 0 && c[k] <= maxid ? pos[c[k]] : -1;
      if (q <= i) {
        ir_error(d, at, "node %d of XGBoost's dump has a child %d that is not after it",
                 raw[i].id, c[k]);
        rc = -1;
        break;
      }
      c[k] = q;
    }
    t->yes = c[0];
    t->no = c[1];
    t->missing = c[2];
  }
  free(pos);
  free(raw);
  return rc;
}

/* ---- the file ---- */

#define MODEL_MAGIC "gop-predictor 2\n"

/* A hash of the feature names, in order: a model of another feature set
 * is refused rather than fed vectors it does not understand. */
static uint64_t features_hash(void) {
  char all[1024] = "";
  size_t n = 0;
  for (int i = 0; i < TUNE_NFEATURES; i++)
    n += (size_t)snprintf(all + n, sizeof all - n, "%s,", tune_feature_name(i));
  return rt_fnv1a64(all, n);
}

static char *payload(const TunePredictor *p, size_t *len) {
  char *buf = NULL;
  FILE *f = open_memstream(&buf, len);
  if (!f) return NULL;
  fprintf(f, "base %.9g\n", p->base);
  for (int i = 0; i < p->nshapes; i++) {
    fputs("shape", f);
    for (int k = 0; k < TUNE_SHAPE_COUNTS; k++) fprintf(f, " %d", p->shape[i].count[k]);
    fprintf(f, " %s\n", p->shape[i].dtype);
  }
  for (int i = 0; i < p->npoints; i++)
    fprintf(f, "point %d %s\n", p->point[i].cases, p->point[i].text);
  fprintf(f, "trees %d\n", p->ntrees);
  for (int t = 0; t < p->ntrees; t++) {
    fprintf(f, "tree %d\n", p->root[t + 1] - p->root[t]);
    for (int i = p->root[t]; i < p->root[t + 1]; i++) {
      const TreeNode *n = &p->node[i];
      if (n->feature < 0)
        fprintf(f, "leaf %.9g\n", n->value);
      else
        fprintf(f, "%d %.9g %d %d %d\n", n->feature, n->value, n->yes, n->no, n->missing);
    }
  }
  if (fclose(f) != 0) {
    free(buf);
    return NULL;
  }
  return buf;
}

typedef struct Blob {
  const char *data;
  size_t len;
} Blob;

static void write_model(FILE *f, const void *ctx) {
  const Blob *b = ctx;
  fprintf(f, MODEL_MAGIC "features %d %016" PRIx64 "\nbytes %zu %016" PRIx64 "\n\n",
          TUNE_NFEATURES, features_hash(), b->len, rt_fnv1a64(b->data, b->len));
  fwrite(b->data, 1, b->len, f);
}

int tune_predictor_save(const TunePredictor *p, const char *path, Diag *d) {
  size_t len = 0;
  char *text = payload(p, &len);
  if (!text) {
    ir_error(d, (Loc){path, 0, 0}, "cannot write the predictor model: out of memory");
    return -1;
  }
  Blob b = {text, len};
  int rc = ir_write_file(path, "the predictor model", write_model, &b, d);
  free(text);
  return rc;
}

/* The next line of the payload into `line` (without its newline); false at
 * the end. */
static bool next_line(const char **s, const char *end, char *line, size_t size, int *lineno) {
  if (*s >= end) return false;
  const char *eol = memchr(*s, '\n', (size_t)(end - *s));
  size_t len = eol ? (size_t)(eol - *s) : (size_t)(end - *s);
  if (len >= size) len = size - 1;
  memcpy(line, *s, len);
  line[len] = 0;
  *s = eol ? eol + 1 : end;
  (*lineno)++;
  return true;
}

/* Parses the payload; NULL after reporting `where:LINE: ...`. */
static TunePredictor *parse_payload(const char *text, size_t len, int first_line,
                                    const char *where, Diag *d) {
  TunePredictor *p = tune_predictor_new();
  if (!p) return NULL;
  const char *s = text, *end = text + len;
  char line[256];
  int lineno = first_line;
  const char *why = NULL;
  int ntrees = -1;
  /* base, shapes, points, trees N */
  if (!next_line(&s, end, line, sizeof line, &lineno) ||
      sscanf(line, "base %g", &p->base) != 1 || !isfinite(p->base))
    why = "expected 'base VALUE'";
  while (!why && next_line(&s, end, line, sizeof line, &lineno)) {
    if (strncmp(line, "shape ", 6) == 0) {
      TuneShapeKey k = {0};
      int *c = k.count, used = 0;
      if (sscanf(line, "shape %d %d %d %d %d %d %d %15s%n", &c[0], &c[1], &c[2], &c[3], &c[4],
                 &c[5], &c[6], k.dtype, &used) != 8 || line[used] != 0)
        why = "a shape line is not 'shape N N N N N N N DTYPE'";
      else if (tune_predictor_add_shape(p, &k) != 0)
        why = "too many shape lines";
      continue;
    }
    if (strncmp(line, "point ", 6) == 0) {
      int cases = -1, at = 0;
      const char *text = NULL;
      if (sscanf(line, "point %d %n", &cases, &at) == 1 && at > 0) text = line + at;
      if (!text || cases < 0 || !*text || strlen(text) >= sizeof p->point[0].text)
        why = "a point line is not 'point CASES TEXT' (CASES >= 0, a text of 1 to 63 "
              "characters)";
      else if (tune_predictor_add_point(p, text, cases) != 0)
        why = "too many point lines";
      continue;
    }
    if (sscanf(line, "trees %d", &ntrees) != 1 || ntrees < 0 || ntrees > MAX_TREES)
      why = "expected 'trees N' (0 to 100000)";
    break;
  }
  if (!why && ntrees < 0) why = "no 'trees N' line";
  for (int t = 0; !why && t < ntrees; t++) {
    int m = 0;
    if (!next_line(&s, end, line, sizeof line, &lineno) || sscanf(line, "tree %d", &m) != 1 ||
        m < 1 || m > MAX_TREE_NODES) {
      why = "expected 'tree NODES' (1 to 2^20)";
      break;
    }
    if (begin_tree(p) != 0) {
      why = "out of memory";
      break;
    }
    for (int i = 0; !why && i < m; i++) {
      TreeNode *n = add_node(p);
      int used = 0;
      if (!n) {
        why = "out of memory";
      } else if (!next_line(&s, end, line, sizeof line, &lineno)) {
        why = "the file ends inside a tree";
      } else if (strncmp(line, "leaf ", 5) == 0) {
        n->feature = -1;
        if (sscanf(line, "leaf %g%n", &n->value, &used) != 1 || line[used] != 0 ||
            !isfinite(n->value))
          why = "a leaf is not 'leaf VALUE' with a finite value";
      } else if (sscanf(line, "%d %g %d %d %d%n", &n->feature, &n->value, &n->yes, &n->no,
                        &n->missing, &used) != 5 || line[used] != 0) {
        why = "a node is neither 'leaf VALUE' nor 'FEATURE THRESHOLD YES NO MISSING'";
      } else if (n->feature < 0 || n->feature >= TUNE_NFEATURES) {
        why = "a split's feature is out of range";
      } else if (isnan(n->value)) {
        why = "a split's threshold is not a number";
      } else if (n->yes <= i || n->no <= i || n->missing <= i || n->yes >= m || n->no >= m ||
                 n->missing >= m) {
        why = "a split's child is not a later node of its tree";
      }
    }
  }
  if (!why && next_line(&s, end, line, sizeof line, &lineno)) why = "lines after the last tree";
  if (why) {
    ir_error(d, (Loc){where, lineno, 0}, "predictor model refused: %s", why);
    tune_predictor_free(p);
    return NULL;
  }
  return p;
}

TunePredictor *tune_predictor_parse(const char *text, size_t len, const char *where, Diag *d) {
  Loc at = {where, 0, 0};
  int nf = 0, off = 0;
  uint64_t fh = 0, blen = 0, sum = 0;
  size_t magic = strlen(MODEL_MAGIC);
  const char *why = NULL;
  if (len >= strlen("gop-predictor 1\n") && memcmp(text, "gop-predictor 1\n", 16) == 0)
    why = "it is an XGBoost model of an older gop: train it again (gopc tune --train)";
  else if (len < magic || memcmp(text, MODEL_MAGIC, magic) != 0)
    why = "not a gop predictor model (no 'gop-predictor 2' header)";
  else if (memchr(text, 0, len))
    why = "it holds a NUL byte";
  else if (sscanf(text + magic, "features %d %" SCNx64 "\nbytes %" SCNu64 " %" SCNx64 "\n\n%n",
                  &nf, &fh, &blen, &sum, &off) != 4 || off == 0)
    why = "its header is damaged";
  else if (nf != TUNE_NFEATURES || fh != features_hash())
    why = "it was trained on other features (another gop version): train it again "
          "(gopc tune --train)";
  else if (blen != len - magic - (size_t)off)
    why = "it is truncated or has bytes after the model";
  else if (rt_fnv1a64(text + magic + off, (size_t)blen) != sum)
    why = "its checksum does not match: the file is corrupt";
  if (why) {
    ir_error(d, at, "predictor model refused: %s", why);
    return NULL;
  }
  return parse_payload(text + magic + off, (size_t)blen, 4, where, d);
}

TunePredictor *tune_predictor_load(const char *path, Diag *d) {
  Loc at = {path, 0, 0};
  FILE *f = fopen(path, "rb");
  if (!f) {
    ir_error(d, at, "predictor model: cannot open: %s", strerror(errno));
    return NULL;
  }
  char *text = NULL;
  size_t cap = 0, len = 0, got;
  char chunk[1 << 16];
  bool nomem = false;
  while ((got = fread(chunk, 1, sizeof chunk, f)) > 0) {
    if (len + got + 1 > cap) {
      char *more = realloc(text, cap = (len + got + 1) * 2);
      if (!more) {
        nomem = true;
        break;
      }
      text = more;
    }
    memcpy(text + len, chunk, got);
    len += got;
  }
  bool bad = ferror(f) || nomem;
  fclose(f);
  if (text) text[len] = 0;
  if (bad) {
    free(text);
    ir_error(d, at, "predictor model: cannot read the file%s", nomem ? " (out of memory)" : "");
    return NULL;
  }
  TunePredictor *p = tune_predictor_parse(text ? text : "", len, path, d);
  free(text);
  return p;
}

/* ---- the model built into the library ---- */

extern const char tune_builtin_model[]; /* generated from tune/builtin.model */

static struct {
  pthread_once_t once;
  TunePredictor *p;
  Diag diag;
} B = {.once = PTHREAD_ONCE_INIT};

static void parse_builtin(void) {
  ir_diag_init(&B.diag, NULL);
  B.p = tune_predictor_parse(tune_builtin_model, strlen(tune_builtin_model),
                             "tune/builtin.model", &B.diag);
}

const TunePredictor *tune_predictor_builtin(Diag *d) {
  pthread_once(&B.once, parse_builtin);
  if (!B.p) {
    const char *reason;
    int len = ir_diag_reason(&B.diag, &reason);
    if (!B.diag.buf) reason = "refused", len = 7; /* out of memory, unreported */
    ir_error(d, (Loc){"tune/builtin.model", 0, 0},
             "the built-in predictor does not parse (%.*s): remake it with "
             "tools/train-builtin-model.sh",
             len, reason);
  }
  return B.p;
}
