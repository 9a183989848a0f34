/* ir/arena.c: bump allocation for a compilation.
 *
 * IR nodes, names and strings live until the whole compilation is thrown
 * away, so they are carved out of large chunks and freed together; passes
 * never have to think about ownership.
 */
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

#include "ir.h"

enum { CHUNK_SIZE = 64 * 1024 };

typedef struct Chunk {
  struct Chunk *next;
  size_t used, size;
  _Alignas(max_align_t) unsigned char data[];
} Chunk;

struct Arena {
  Chunk *head;
};

static void out_of_memory(size_t size) {
  fprintf(stderr, "gop: out of memory (asked for %zu bytes)\n", size);
  abort();
}

Arena *ir_arena_new(void) {
  Arena *a = calloc(1, sizeof *a);
  if (!a) out_of_memory(sizeof *a);
  return a;
}

void ir_arena_free(Arena *a) {
  if (!a) return;
  for (Chunk *c = a->head, *next; c; c = next) {
    next = c->next;
    free(c);
  }
  free(a);
}

void *ir_alloc(Arena *a, size_t size) {
  size = (size + _Alignof(max_align_t) - 1) & ~(_Alignof(max_align_t) - 1);
  Chunk *c = a->head;
  if (!c || c->size - c->used < size) {
    size_t cap = size > CHUNK_SIZE ? size : CHUNK_SIZE;
    c = malloc(sizeof(Chunk) + cap);
    if (!c) out_of_memory(size);
    c->used = 0;
    c->size = cap;
    c->next = a->head;
    a->head = c;
  }
  void *p = c->data + c->used;
  c->used += size;
  memset(p, 0, size);
  return p;
}

char *ir_strndup(Arena *a, const char *s, size_t n) {
  char *p = ir_alloc(a, n + 1);
  memcpy(p, s, n);
  p[n] = 0;
  return p;
}

char *ir_strdup(Arena *a, const char *s) { return ir_strndup(a, s, strlen(s)); }

char *ir_sprintf(Arena *a, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  int n = vsnprintf(NULL, 0, fmt, ap);
  va_end(ap);
  char *p = ir_alloc(a, (size_t)n + 1);
  va_start(ap, fmt);
  vsnprintf(p, (size_t)n + 1, fmt, ap);
  va_end(ap);
  return p;
}
