/* ir/diag.c: the one diagnostics sink of a compilation.
 *
 * Every user-facing error of the compiler goes through ir_error, which
 * prints `file:line:col: error: message`, the source line and a caret when
 * the text of `file` was registered, counts the error, and keeps the text so
 * the C API can return it. A location with no file prints just
 * `error: message`; line 0 or column 0 leave those parts out (graph files
 * have lines, not columns).
 */
#include <stdlib.h>
#include <string.h>

#include "ir.h"

void ir_diag_init(Diag *d, FILE *out) {
  memset(d, 0, sizeof *d);
  d->out = out;
}

void ir_diag_free(Diag *d) {
  free(d->buf);
  for (DiagSource *s = d->sources, *next; s; s = next) {
    next = s->next;
    free(s);
  }
  memset(d, 0, sizeof *d);
}

int ir_diag_reason(const Diag *d, const char **text) {
  const char *msg = d->buf ? d->buf : "";
  const char *e = strstr(msg, "error: ");
  *text = e ? e + 7 : msg;
  return (int)strcspn(*text, "\n");
}

/* The diagnostics keep their own copy of a registered text (node, file
 * name and text in one allocation): a text parsed in a scratch arena (a
 * schedule's text, while a run is keyed) is freed long before the context
 * and its diagnostics are. A text registered again under the same name
 * moves to the front, so the latest registration of a name is the one
 * quoted and repeated parses add nothing. */
void ir_diag_source(Diag *d, const char *file, const char *text) {
  if (!text) return;
  for (DiagSource **p = &d->sources; *p; p = &(*p)->next) {
    DiagSource *s = *p;
    if (((!file && !s->file) || (file && s->file && strcmp(s->file, file) == 0)) &&
        strcmp(s->text, text) == 0) {
      *p = s->next;
      s->next = d->sources;
      d->sources = s;
      return;
    }
  }
  size_t nf = file ? strlen(file) + 1 : 0, nt = strlen(text) + 1;
  DiagSource *s = malloc(sizeof *s + nf + nt);
  if (!s) return; /* only the quoting of source lines is lost */
  char *mem = (char *)(s + 1);
  memcpy(mem, text, nt);
  s->text = mem;
  s->file = file ? memcpy(mem + nt, file, nf) : NULL;
  s->next = d->sources;
  d->sources = s;
}

static void emit(Diag *d, const char *text, size_t n) {
  if (d->out) fwrite(text, 1, n, d->out);
  if (d->len + n + 1 > d->cap) {
    size_t cap = d->cap ? d->cap : 256;
    while (cap < d->len + n + 1) cap *= 2;
    char *buf = realloc(d->buf, cap);
    if (!buf) return;
    d->buf = buf;
    d->cap = cap;
  }
  memcpy(d->buf + d->len, text, n);
  d->len += n;
  d->buf[d->len] = 0;
}

void ir_diag_append(Diag *to, const Diag *from) {
  if (from->len) emit(to, from->buf, from->len);
  to->nerrors += from->nerrors;
  to->nwarnings += from->nwarnings;
}

static void emitf(Diag *d, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));
static void emitf(Diag *d, const char *fmt, ...) {
  char small[512];
  va_list ap;
  va_start(ap, fmt);
  int n = vsnprintf(small, sizeof small, fmt, ap);
  va_end(ap);
  if (n < 0) return;
  if ((size_t)n < sizeof small) {
    emit(d, small, (size_t)n);
    return;
  }
  char *big = malloc((size_t)n + 1);
  if (!big) return;
  va_start(ap, fmt);
  vsnprintf(big, (size_t)n + 1, fmt, ap);
  va_end(ap);
  emit(d, big, (size_t)n);
  free(big);
}

static const char *find_source(Diag *d, const char *file) {
  for (DiagSource *s = d->sources; s; s = s->next)
    if (s->file == file || (file && s->file && strcmp(s->file, file) == 0))
      return s->text;
  return NULL;
}

/* Quotes line `loc.line` of the registered text with a caret under the
 * column; tabs are kept so the caret lines up in a terminal. */
static void quote_line(Diag *d, Loc loc) {
  const char *text = find_source(d, loc.file);
  if (!text || loc.line <= 0) return;
  const char *p = text;
  for (int line = 1; line < loc.line && *p; p++)
    if (*p == '\n') line++;
  const char *end = strchr(p, '\n');
  size_t n = end ? (size_t)(end - p) : strlen(p);
  emit(d, p, n);
  emit(d, "\n", 1);
  if (loc.col <= 0) return;
  for (int i = 1; i < loc.col && (size_t)(i - 1) < n; i++)
    emit(d, p[i - 1] == '\t' ? "\t" : " ", 1);
  emit(d, "^\n", 2);
}

void ir_verror(Diag *d, const char *severity, Loc loc, const char *fmt,
               va_list ap) {
  bool is_error = strcmp(severity, "error") == 0;
  int cap = d->max_errors > 0 ? d->max_errors : 50;
  if (is_error) {
    d->nerrors++;
    if (d->nerrors > cap) {
      if (d->nerrors == cap + 1) emitf(d, "error: too many errors, stopping\n");
      return;
    }
  } else if (strcmp(severity, "warning") == 0) {
    d->nwarnings++;
  }
  if (loc.file && loc.line > 0 && loc.col > 0)
    emitf(d, "%s:%d:%d: ", loc.file, loc.line, loc.col);
  else if (loc.file && loc.line > 0)
    emitf(d, "%s:%d: ", loc.file, loc.line);
  else if (loc.file)
    emitf(d, "%s: ", loc.file);
  char msg[1024];
  vsnprintf(msg, sizeof msg, fmt, ap);
  emitf(d, "%s: %s\n", severity, msg);
  quote_line(d, loc);
}

void ir_error(Diag *d, Loc loc, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  ir_verror(d, "error", loc, fmt, ap);
  va_end(ap);
}

void ir_warning(Diag *d, Loc loc, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  ir_verror(d, "warning", loc, fmt, ap);
  va_end(ap);
}

void ir_note(Diag *d, Loc loc, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  ir_verror(d, "note", loc, fmt, ap);
  va_end(ap);
}

_Noreturn void ir_unreachable_at(const char *file, int line, const char *msg) {
  fprintf(stderr, "gop: internal error at %s:%d: %s\n", file, line, msg);
  abort();
}
