/* tune/db.c: the tuning database, a SQLite file.
 *
 * One table holds every measurement: the key (operator hash, F, dtype,
 * graph signature, GPU and compute capability, compiler version) and what
 * was measured (schedule, time, GB/s, fraction of the fewest-bytes bound,
 * when, and the point's lowered facts: atomic stores and kernels); a
 * second table keeps each operator's shape (accesses per edge and vertex)
 * under its hash, so that the learned predictor can be trained from the
 * file alone, whatever operators it holds. The file is marked as ours by PRAGMA application_id and carries
 * its schema version in PRAGMA user_version; older schemas are brought up
 * to date by the migration table below, one transaction for all steps.
 *
 * The user's files come first: before anything writes, the file is looked
 * at read-only, and a file that is not SQLite, a SQLite file of another
 * application, or one from a newer gop is refused with a message and left
 * byte for byte as it was. WAL mode keeps a crashed writer from damaging
 * what is there: each put is one transaction, so a killed tuner leaves
 * whole rows or none.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <inttypes.h>
#include <sqlite3.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "tune/tune.h"

struct TuneDb {
  sqlite3 *db;
  char *path;
};

/* Migration i takes the schema from version i to i + 1. Append, never
 * edit: a file written by an older gop replays the steps it lacks. */
static const char *const migrations[] = {
    /* 0 -> 1: the measurements */
    "CREATE TABLE tuning ("
    "  id INTEGER PRIMARY KEY,"
    "  op_hash TEXT NOT NULL,"      /* 16 hex digits: SQLite integers are signed */
    "  F INTEGER NOT NULL,"
    "  dtype TEXT NOT NULL,"
    "  nv INTEGER NOT NULL, ne INTEGER NOT NULL,"
    "  deg_mean REAL NOT NULL, deg_std REAL NOT NULL, deg_max INTEGER NOT NULL,"
    "  aes REAL NOT NULL,"
    "  gpu TEXT NOT NULL, cc INTEGER NOT NULL, compiler TEXT NOT NULL,"
    "  schedule TEXT NOT NULL, time_ms REAL NOT NULL, gbps REAL NOT NULL,"
    "  bound_fraction REAL NOT NULL, measured_at INTEGER NOT NULL)",
    /* 1 -> 2: look-ups by key */
    "CREATE INDEX tuning_key ON tuning (op_hash, F, dtype, nv, ne, gpu, cc, compiler)",
    /* 2 -> 3: what the learned predictor needs beyond the key: the
     * operator's shape (once per operator) and the point's lowered facts
     * (-1 in rows measured before: unknown) */
    "CREATE TABLE ops ("
    "  op_hash TEXT PRIMARY KEY, name TEXT NOT NULL,"
    "  edge_rows INTEGER NOT NULL, edge_red_rows INTEGER NOT NULL,"
    "  edge_scalars INTEGER NOT NULL, vertex_rows INTEGER NOT NULL,"
    "  vertex_scalars INTEGER NOT NULL, feature_loop INTEGER NOT NULL);"
    "ALTER TABLE tuning ADD COLUMN atomic_rows INTEGER NOT NULL DEFAULT -1;"
    "ALTER TABLE tuning ADD COLUMN atomic_scalars INTEGER NOT NULL DEFAULT -1;"
    "ALTER TABLE tuning ADD COLUMN kernels INTEGER NOT NULL DEFAULT -1;"
    "ALTER TABLE tuning ADD COLUMN mapping INTEGER NOT NULL DEFAULT -1", /* 1 warp, 2 vertex */
    /* 3 -> 4: the vertex orders `gopc tune --orders` measured: under the
     * key of the graph in its own order, each order's best schedule and
     * time (the schedules themselves are in `tuning`, under the key of the
     * renumbered graph) */
    "CREATE TABLE orders ("
    "  id INTEGER PRIMARY KEY,"
    "  op_hash TEXT NOT NULL, F INTEGER NOT NULL, dtype TEXT NOT NULL,"
    "  nv INTEGER NOT NULL, ne INTEGER NOT NULL,"
    "  deg_mean REAL NOT NULL, deg_std REAL NOT NULL, deg_max INTEGER NOT NULL,"
    "  aes REAL NOT NULL,"
    "  gpu TEXT NOT NULL, cc INTEGER NOT NULL, compiler TEXT NOT NULL,"
    "  vertex_order TEXT NOT NULL, schedule TEXT NOT NULL, time_ms REAL NOT NULL,"
    "  measured_at INTEGER NOT NULL);"
    "CREATE INDEX orders_key ON orders (op_hash, F, dtype, nv, ne, gpu, cc, compiler)",
};
enum { SCHEMA_VERSION = sizeof migrations / sizeof *migrations };

int tune_db_schema_version(void) { return SCHEMA_VERSION; }

static void db_error(Diag *d, const char *path, const char *what, sqlite3 *db) {
  ir_error(d, (Loc){path, 0, 0}, "tuning database: %s%s%s", what, db ? ": " : "",
           db ? sqlite3_errmsg(db) : "");
}

static int pragma_int(sqlite3 *db, const char *pragma, int64_t *out) {
  sqlite3_stmt *st;
  if (sqlite3_prepare_v2(db, pragma, -1, &st, NULL) != SQLITE_OK) return -1;
  int rc = sqlite3_step(st);
  if (rc == SQLITE_ROW) *out = sqlite3_column_int64(st, 0);
  sqlite3_finalize(st);
  return rc == SQLITE_ROW ? 0 : -1;
}

/* Looks at an existing file without writing to it. 0 if it may be opened
 * for writing, -1 after reporting why not. */
static int inspect(const char *path, Diag *d) {
  FILE *f = fopen(path, "rb");
  if (!f) {
    ir_error(d, (Loc){path, 0, 0}, "tuning database: cannot read: %s", strerror(errno));
    return -1;
  }
  char magic[16];
  size_t n = fread(magic, 1, sizeof magic, f);
  fclose(f);
  if (n == 0) return 0; /* an empty file is an empty database */
  if (n < sizeof magic || memcmp(magic, "SQLite format 3", 16) != 0) {
    ir_error(d, (Loc){path, 0, 0},
             "tuning database: file is not a database (not SQLite); left unchanged");
    return -1;
  }
  /* another process may be creating or migrating the file right now: wait
   * for it, as the writing connection below does, rather than call the
   * file corrupt. The busy timeout covers its locks; a read-only
   * connection that meets the file between its switch to WAL and its
   * shared-memory file cannot open it at all, so that is tried again for
   * up to two seconds before the file is reported */
  sqlite3 *db = NULL;
  int64_t app = 0, version = 0, tables = 0;
  bool read = false;
  int damaged = 0;
  for (int attempt = 0; attempt < 40 && !read; attempt++) {
    if (db) {
      sqlite3_close(db);
      db = NULL;
      usleep(50000);
    }
    if (sqlite3_open_v2(path, &db, SQLITE_OPEN_READONLY, NULL) != SQLITE_OK) continue;
    sqlite3_busy_timeout(db, 5000);
    read = pragma_int(db, "PRAGMA application_id", &app) == 0 &&
           pragma_int(db, "PRAGMA user_version", &version) == 0 &&
           pragma_int(db, "SELECT count(*) FROM sqlite_master", &tables) == 0;
    /* a damaged file is not a busy one: after three looks (in case a
     * writer was caught mid-page) say so, not after two seconds of retries
     * (what held tests/fuzz/fuzz_tunedb to about one input a second).
     * Damaged: not a database, corrupt, or a header SQLite refuses
     * ("unsupported file format", SQLITE_ERROR); a creator's locks and
     * missing shared-memory file give BUSY, LOCKED or CANTOPEN instead */
    int code = read ? SQLITE_OK : sqlite3_errcode(db) & 0xff;
    if ((code == SQLITE_NOTADB || code == SQLITE_CORRUPT || code == SQLITE_ERROR) &&
        ++damaged == 3)
      break;
  }
  int rc = -1;
  if (!read) {
    db_error(d, path, "cannot read (corrupt?); left unchanged", db);
  } else if (app != TUNE_DB_APPLICATION_ID && (app != 0 || tables > 0)) {
    ir_error(d, (Loc){path, 0, 0},
             "tuning database: a SQLite database of another application "
             "(application_id 0x%08" PRIx64 ", gop's is 0x%08x); left unchanged",
             (uint64_t)(uint32_t)app, TUNE_DB_APPLICATION_ID);
  } else if (version > SCHEMA_VERSION) {
    ir_error(d, (Loc){path, 0, 0},
             "tuning database: schema version %" PRId64 " is newer than this gop's (%d); "
             "left unchanged",
             version, SCHEMA_VERSION);
  } else if (version < 0) { /* found by tests/fuzz/fuzz_tunedb */
    ir_error(d, (Loc){path, 0, 0},
             "tuning database: schema version %" PRId64 " is not one gop writes; left "
             "unchanged", version);
  } else {
    rc = 0;
  }
  sqlite3_close(db);
  return rc;
}

static int exec(TuneDb *t, const char *sql, Diag *d) {
  char *msg = NULL;
  if (sqlite3_exec(t->db, sql, NULL, NULL, &msg) == SQLITE_OK) return 0;
  ir_error(d, (Loc){t->path, 0, 0}, "tuning database: %s", msg ? msg : sqlite3_errmsg(t->db));
  sqlite3_free(msg);
  return -1;
}

/* Puts the file in WAL mode. Switching needs the file to itself, and
 * SQLite answers SQLITE_BUSY at once, without its busy handler, when
 * another process opening the same new file holds a read lock (a
 * deadlock to SQLite): tried again for up to the busy timeout, 5 s. */
static int set_wal(TuneDb *t, Diag *d) {
  int rc = SQLITE_BUSY;
  for (int attempt = 0; attempt < 250 && (rc == SQLITE_BUSY || rc == SQLITE_LOCKED); attempt++) {
    if (attempt) usleep(20000);
    rc = sqlite3_exec(t->db, "PRAGMA journal_mode = WAL", NULL, NULL, NULL) & 0xff;
  }
  if (rc == SQLITE_OK) return 0;
  db_error(d, t->path, "cannot switch to WAL mode", t->db);
  return -1;
}

/* Brings the schema to SCHEMA_VERSION in one transaction. */
static int migrate(TuneDb *t, Diag *d) {
  if (exec(t, "BEGIN IMMEDIATE", d) != 0) return -1;
  int64_t version = 0;
  if (pragma_int(t->db, "PRAGMA user_version", &version) != 0) {
    db_error(d, t->path, "cannot read the schema version", t->db);
    exec(t, "ROLLBACK", d);
    return -1;
  }
  if (version < 0) { /* found by tests/fuzz/fuzz_tunedb: it indexed migrations[] */
    ir_error(d, (Loc){t->path, 0, 0},
             "tuning database: schema version %" PRId64 " is not one gop writes; left "
             "unchanged", version);
    exec(t, "ROLLBACK", d);
    return -1;
  }
  for (int64_t v = version; v < SCHEMA_VERSION; v++)
    if (exec(t, migrations[v], d) != 0) {
      exec(t, "ROLLBACK", d);
      return -1;
    }
  char sql[128];
  snprintf(sql, sizeof sql, "PRAGMA application_id = %d; PRAGMA user_version = %d",
           TUNE_DB_APPLICATION_ID, SCHEMA_VERSION);
  if (exec(t, sql, d) != 0) {
    exec(t, "ROLLBACK", d);
    return -1;
  }
  return exec(t, "COMMIT", d);
}

TuneDb *tune_db_open(const char *path, Diag *d) {
  struct stat sb;
  if (stat(path, &sb) == 0 && inspect(path, d) != 0) return NULL;
  TuneDb *t = calloc(1, sizeof *t);
  if (!t || !(t->path = strdup(path))) {
    free(t);
    ir_error(d, (Loc){path, 0, 0}, "tuning database: out of memory");
    return NULL;
  }
  if (sqlite3_open_v2(path, &t->db, SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE, NULL) !=
      SQLITE_OK) {
    db_error(d, path, "cannot open", t->db);
    tune_db_close(t);
    return NULL;
  }
  sqlite3_busy_timeout(t->db, 5000);
  if (set_wal(t, d) != 0 || migrate(t, d) != 0) {
    tune_db_close(t);
    return NULL;
  }
  return t;
}

void tune_db_close(TuneDb *t) {
  if (!t) return;
  sqlite3_close(t->db);
  free(t->path);
  free(t);
}

static const char *const key_where =
    "op_hash = ?1 AND F = ?2 AND dtype = ?3 AND nv = ?4 AND ne = ?5 AND deg_mean = ?6 AND "
    "deg_std = ?7 AND deg_max = ?8 AND aes = ?9 AND gpu = ?10 AND cc = ?11 AND "
    "compiler = ?12";

static void bind_key(sqlite3_stmt *st, const TuneKey *k) {
  char hash[17];
  snprintf(hash, sizeof hash, "%016" PRIx64, k->op_hash);
  sqlite3_bind_text(st, 1, hash, -1, SQLITE_TRANSIENT);
  sqlite3_bind_int64(st, 2, k->F);
  sqlite3_bind_text(st, 3, k->dtype ? k->dtype : "f32", -1, SQLITE_TRANSIENT);
  sqlite3_bind_int64(st, 4, k->graph.nv);
  sqlite3_bind_int64(st, 5, k->graph.ne);
  sqlite3_bind_double(st, 6, k->graph.deg_mean);
  sqlite3_bind_double(st, 7, k->graph.deg_std);
  sqlite3_bind_int64(st, 8, k->graph.deg_max);
  sqlite3_bind_double(st, 9, k->graph.aes);
  sqlite3_bind_text(st, 10, k->gpu ? k->gpu : "", -1, SQLITE_TRANSIENT);
  sqlite3_bind_int(st, 11, k->cc);
  sqlite3_bind_text(st, 12, k->compiler ? k->compiler : "", -1, SQLITE_TRANSIENT);
}

/* `sql` prepared with `k` bound to ?1..?12 (key_where's or an insert's
 * first columns); NULL after reporting "cannot WHAT". */
static sqlite3_stmt *prepare_keyed(TuneDb *t, const char *sql, const TuneKey *k,
                                   const char *what, Diag *d) {
  sqlite3_stmt *st = NULL;
  if (sqlite3_prepare_v2(t->db, sql, -1, &st, NULL) != SQLITE_OK) {
    db_error(d, t->path, what, t->db);
    return NULL;
  }
  bind_key(st, k);
  return st;
}

/* Records the operator's shape under its hash (the same hash, the same
 * IR, the same shape: a repeat replaces the row with itself). Inside the
 * caller's transaction. */
static int put_op(TuneDb *t, const TuneKey *k, Diag *d) {
  const char *sql = "INSERT OR REPLACE INTO ops VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8)";
  sqlite3_stmt *st = NULL;
  if (sqlite3_prepare_v2(t->db, sql, -1, &st, NULL) != SQLITE_OK) {
    db_error(d, t->path, "cannot store the operator", t->db);
    return -1;
  }
  char hash[17];
  snprintf(hash, sizeof hash, "%016" PRIx64, k->op_hash);
  const TuneOpShape *s = k->shape;
  sqlite3_bind_text(st, 1, hash, -1, SQLITE_TRANSIENT);
  sqlite3_bind_text(st, 2, k->op_name ? k->op_name : "", -1, SQLITE_TRANSIENT);
  int v[] = {s->edge_rows,   s->edge_red_rows,  s->edge_scalars,
             s->vertex_rows, s->vertex_scalars, s->feature_loop};
  for (int i = 0; i < 6; i++) sqlite3_bind_int(st, 3 + i, v[i]);
  int rc = sqlite3_step(st);
  sqlite3_finalize(st);
  if (rc != SQLITE_DONE) {
    db_error(d, t->path, "cannot store the operator", t->db);
    return -1;
  }
  return 0;
}

int tune_db_put(TuneDb *t, const TuneKey *k, const TuneRecord *r, Diag *d) {
  const char *sql =
      "INSERT INTO tuning (op_hash, F, dtype, nv, ne, deg_mean, deg_std, deg_max, aes, gpu, cc, "
      "compiler, schedule, time_ms, gbps, bound_fraction, measured_at, atomic_rows, "
      "atomic_scalars, kernels, mapping) VALUES "
      "(?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13, ?14, ?15, ?16, ?17, ?18, ?19, "
      "?20, ?21)";
  if (exec(t, "BEGIN IMMEDIATE", d) != 0) return -1;
  if (k->shape && put_op(t, k, d) != 0) {
    exec(t, "ROLLBACK", d);
    return -1;
  }
  sqlite3_stmt *st = prepare_keyed(t, sql, k, "cannot store", d);
  if (!st) {
    exec(t, "ROLLBACK", d);
    return -1;
  }
  sqlite3_bind_text(st, 13, r->schedule, -1, SQLITE_TRANSIENT);
  sqlite3_bind_double(st, 14, r->time_ms);
  sqlite3_bind_double(st, 15, r->gbps);
  sqlite3_bind_double(st, 16, r->bound_fraction);
  sqlite3_bind_int64(st, 17, r->measured_at ? r->measured_at : (int64_t)time(NULL));
  sqlite3_bind_int(st, 18, r->have_facts ? r->atomic_rows : -1);
  sqlite3_bind_int(st, 19, r->have_facts ? r->atomic_scalars : -1);
  sqlite3_bind_int(st, 20, r->have_facts ? r->kernels : -1);
  sqlite3_bind_int(st, 21, r->have_facts ? (r->warp ? 1 : 0) | (r->vertex ? 2 : 0) : -1);
  int rc = sqlite3_step(st);
  sqlite3_finalize(st);
  if (rc != SQLITE_DONE) {
    db_error(d, t->path, "cannot store", t->db);
    exec(t, "ROLLBACK", d);
    return -1;
  }
  return exec(t, "COMMIT", d);
}

static void read_record(sqlite3_stmt *st, int col, TuneRecord *r) {
  memset(r, 0, sizeof *r);
  const unsigned char *s = sqlite3_column_text(st, col);
  snprintf(r->schedule, sizeof r->schedule, "%s", s ? (const char *)s : "");
  r->time_ms = sqlite3_column_double(st, col + 1);
  r->gbps = sqlite3_column_double(st, col + 2);
  r->bound_fraction = sqlite3_column_double(st, col + 3);
  r->measured_at = sqlite3_column_int64(st, col + 4);
}

int tune_db_get_best(TuneDb *t, const TuneKey *k, TuneRecord *out, Diag *d) {
  char sql[1024];
  snprintf(sql, sizeof sql,
           "SELECT schedule, time_ms, gbps, bound_fraction, measured_at FROM tuning "
           "WHERE %s ORDER BY time_ms, id LIMIT 1",
           key_where);
  sqlite3_stmt *st = prepare_keyed(t, sql, k, "cannot look up", d);
  if (!st) return -1;
  int rc = sqlite3_step(st), found = 0;
  if (rc == SQLITE_ROW) {
    read_record(st, 0, out);
    found = 1;
  } else if (rc != SQLITE_DONE) {
    db_error(d, t->path, "cannot look up", t->db);
    found = -1;
  }
  sqlite3_finalize(st);
  return found;
}

int tune_db_put_order(TuneDb *t, const TuneKey *k, const TuneOrder *o, Diag *d) {
  const char *sql =
      "INSERT INTO orders (op_hash, F, dtype, nv, ne, deg_mean, deg_std, deg_max, aes, gpu, cc, "
      "compiler, vertex_order, schedule, time_ms, measured_at) VALUES "
      "(?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13, ?14, ?15, ?16)";
  sqlite3_stmt *st = prepare_keyed(t, sql, k, "cannot store the vertex order", d);
  if (!st) return -1;
  sqlite3_bind_text(st, 13, o->order, -1, SQLITE_TRANSIENT);
  sqlite3_bind_text(st, 14, o->schedule, -1, SQLITE_TRANSIENT);
  sqlite3_bind_double(st, 15, o->time_ms);
  sqlite3_bind_int64(st, 16, (int64_t)time(NULL));
  int rc = sqlite3_step(st); /* one statement: its own transaction */
  sqlite3_finalize(st);
  if (rc != SQLITE_DONE) {
    db_error(d, t->path, "cannot store the vertex order", t->db);
    return -1;
  }
  return 0;
}

int tune_db_orders(TuneDb *t, const TuneKey *k, TuneOrder *out, int max, Diag *d) {
  char sql[1024];
  /* each order's fastest row, fastest order first */
  snprintf(sql, sizeof sql,
           "SELECT vertex_order, schedule, MIN(time_ms) AS best FROM orders WHERE %s "
           "GROUP BY vertex_order ORDER BY best, vertex_order",
           key_where);
  sqlite3_stmt *st = prepare_keyed(t, sql, k, "cannot look up the vertex orders", d);
  if (!st) return -1;
  int n = 0, rc;
  while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
    if (n++ >= max) continue; /* counted, not kept */
    const unsigned char *order = sqlite3_column_text(st, 0), *sched = sqlite3_column_text(st, 1);
    TuneOrder *o = &out[n - 1];
    snprintf(o->order, sizeof o->order, "%s", order ? (const char *)order : "");
    snprintf(o->schedule, sizeof o->schedule, "%s", sched ? (const char *)sched : "");
    o->time_ms = sqlite3_column_double(st, 2);
  }
  if (rc != SQLITE_DONE) {
    db_error(d, t->path, "cannot look up the vertex orders", t->db);
    n = -1;
  }
  sqlite3_finalize(st);
  return n;
}

int tune_db_list(TuneDb *t, TuneListFn fn, void *ctx, Diag *d) {
  const char *sql =
      "SELECT t.op_hash, F, dtype, nv, ne, deg_mean, deg_std, deg_max, aes, gpu, cc, compiler, "
      "schedule, time_ms, gbps, bound_fraction, measured_at, atomic_rows, atomic_scalars, "
      "kernels, mapping, o.name, o.edge_rows, o.edge_red_rows, o.edge_scalars, o.vertex_rows, "
      "o.vertex_scalars, o.feature_loop "
      "FROM tuning t LEFT JOIN ops o ON o.op_hash = t.op_hash ORDER BY t.id";
  sqlite3_stmt *st = NULL;
  if (sqlite3_prepare_v2(t->db, sql, -1, &st, NULL) != SQLITE_OK) {
    db_error(d, t->path, "cannot list", t->db);
    return -1;
  }
  int n = 0, rc;
  while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
    TuneKey k = {0};
    const char *hash = (const char *)sqlite3_column_text(st, 0);
    k.op_hash = hash ? strtoull(hash, NULL, 16) : 0;
    k.F = sqlite3_column_int64(st, 1);
    k.dtype = (const char *)sqlite3_column_text(st, 2);
    k.graph = (TuneGraphSig){sqlite3_column_int64(st, 3), sqlite3_column_int64(st, 4),
                             sqlite3_column_double(st, 5), sqlite3_column_double(st, 6),
                             sqlite3_column_int64(st, 7), sqlite3_column_double(st, 8)};
    k.gpu = (const char *)sqlite3_column_text(st, 9);
    k.cc = sqlite3_column_int(st, 10);
    k.compiler = (const char *)sqlite3_column_text(st, 11);
    TuneOpShape shape;
    if (sqlite3_column_type(st, 21) != SQLITE_NULL) {
      k.op_name = (const char *)sqlite3_column_text(st, 21);
      shape = (TuneOpShape){.edge_rows = sqlite3_column_int(st, 22),
                            .edge_red_rows = sqlite3_column_int(st, 23),
                            .edge_scalars = sqlite3_column_int(st, 24),
                            .vertex_rows = sqlite3_column_int(st, 25),
                            .vertex_scalars = sqlite3_column_int(st, 26),
                            .feature_loop = sqlite3_column_int(st, 27) != 0};
      k.shape = &shape;
    }
    TuneRecord r;
    read_record(st, 12, &r);
    r.atomic_rows = sqlite3_column_int(st, 17);
    r.atomic_scalars = sqlite3_column_int(st, 18);
    r.kernels = sqlite3_column_int(st, 19);
    int mapping = sqlite3_column_int(st, 20);
    r.warp = mapping > 0 && (mapping & 1);
    r.vertex = mapping > 0 && (mapping & 2);
    r.have_facts = r.atomic_rows >= 0 && r.atomic_scalars >= 0 && r.kernels >= 0 && mapping >= 0;
    if (fn) fn(ctx, &k, &r);
    n++;
  }
  if (rc != SQLITE_DONE) {
    db_error(d, t->path, "cannot list", t->db);
    n = -1;
  }
  sqlite3_finalize(st);
  return n;
}
