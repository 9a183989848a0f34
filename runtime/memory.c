/* runtime/memory.c: device memory.
 *
 * A device tensor is a named buffer: the name is what an out-of-memory
 * message needs ("while allocating 12.5 GiB for tensor Y"), and the
 * accounting (live, peak) is what a tuner needs to see a leak or to know how
 * much a schedule's formats cost. Copies check their sizes against the
 * buffer before the driver sees them, since the driver cannot tell a short
 * buffer from a long one.
 */
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

#include "cuda.def"

static const Loc no_loc = {0};

static struct {
  _Atomic uint64_t live_bytes, peak_bytes;
  _Atomic int64_t live_tensors, total_allocs;
} M;

RtMemStats rt_mem_stats(void) {
  return (RtMemStats){
      .live_bytes = atomic_load(&M.live_bytes),
      .peak_bytes = atomic_load(&M.peak_bytes),
      .live_tensors = atomic_load(&M.live_tensors),
      .total_allocs = atomic_load(&M.total_allocs),
  };
}

static void account_alloc(uint64_t bytes) {
  uint64_t live = atomic_fetch_add(&M.live_bytes, bytes) + bytes;
  uint64_t peak = atomic_load(&M.peak_bytes);
  while (live > peak && !atomic_compare_exchange_weak(&M.peak_bytes, &peak, live))
    ;
  atomic_fetch_add(&M.live_tensors, 1);
  atomic_fetch_add(&M.total_allocs, 1);
}

static void set_name(RtDevTensor *t, const char *name) {
  snprintf(t->name, sizeof t->name, "%s", name ? name : "tensor");
}

RtStatus rt_tensor_alloc(RtDevTensor *t, size_t bytes, const char *name,
                         Diag *d) {
  memset(t, 0, sizeof *t);
  set_name(t, name);
  if (bytes == 0) return RT_OK; /* the driver refuses size 0; nothing to hold */
  char size[32];
  rt_format_bytes(bytes, size);
  RtStatus s = rt_cuda_open(d);
  if (s) {
    ir_note(d, no_loc, "so %s (%s) cannot be allocated on the GPU", t->name,
            size);
    return s;
  }
  CUdeviceptr p = 0;
  char what[128];
  snprintf(what, sizeof what, "while allocating %s for %s", size, t->name);
  s = RT_CU_WHAT(what, cuMemAlloc_v2, (&p, bytes));
  if (s == RT_OOM) {
    /* What is left tells the user whether a smaller graph or fewer formats
     * would fit. Its own failure would add nothing, so it is not checked. */
    size_t free_bytes = 0, total_bytes = 0;
    if (rt_cuda_api()->cuMemGetInfo_v2(&free_bytes, &total_bytes) ==
        CUDA_SUCCESS) {
      char f[32], tot[32];
      ir_note(d, no_loc, "the GPU has %s free of %s",
              rt_format_bytes(free_bytes, f), rt_format_bytes(total_bytes, tot));
    }
  }
  if (s) return s;
  t->ptr = p;
  t->bytes = bytes;
  t->epoch = rt_cuda_epoch();
  account_alloc(bytes);
  return RT_OK;
}

/* Refuses a copy of `bytes` that does not fit `t`, or a `t` of a closed
 * session; then opens the driver. */
static RtStatus copy_check(const RtDevTensor *t, size_t bytes,
                           const char *dir, Diag *d) {
  if (bytes > t->bytes) {
    char a[32], b[32];
    ir_error(d, no_loc, "cannot copy %s %s %s, which holds %s",
             rt_format_bytes(bytes, a), dir, t->name,
             rt_format_bytes(t->bytes, b));
    return RT_ERR;
  }
  if (bytes == 0) return RT_OK;
  if (t->epoch != rt_cuda_epoch()) {
    ir_error(d, no_loc,
             "%s belongs to a CUDA session that was closed; allocate it again",
             t->name);
    return RT_ERR;
  }
  return rt_cuda_open(d);
}

RtStatus rt_tensor_upload(RtDevTensor *t, const void *host, size_t bytes,
                          Diag *d) {
  RtStatus s = copy_check(t, bytes, "into", d);
  if (s || bytes == 0) return s;
  char what[96];
  snprintf(what, sizeof what, "while copying into %s", t->name);
  return RT_CU_WHAT(what, cuMemcpyHtoD_v2, (t->ptr, host, bytes));
}

RtStatus rt_tensor_upload_at(RtDevTensor *t, size_t offset, const void *host, size_t bytes,
                             Diag *d) {
  if (offset > t->bytes) {
    ir_error(d, no_loc, "cannot copy into %s at byte %zu: it holds %zu bytes", t->name,
             offset, t->bytes);
    return RT_ERR;
  }
  RtStatus s = copy_check(t, offset + bytes, "into", d);
  if (s || bytes == 0) return s;
  char what[96];
  snprintf(what, sizeof what, "while copying into %s", t->name);
  return RT_CU_WHAT(what, cuMemcpyHtoD_v2, (t->ptr + offset, host, bytes));
}

RtStatus rt_tensor_download(const RtDevTensor *t, void *host, size_t bytes,
                            Diag *d) {
  RtStatus s = copy_check(t, bytes, "out of", d);
  if (s || bytes == 0) return s;
  char what[96];
  snprintf(what, sizeof what, "while copying out of %s", t->name);
  return RT_CU_WHAT(what, cuMemcpyDtoH_v2, (host, t->ptr, bytes));
}

RtStatus rt_tensor_fill32(RtDevTensor *t, uint32_t word, Diag *d) {
  if (t->bytes % 4) {
    ir_error(d, no_loc, "cannot fill %s with 32-bit words: it holds %zu bytes",
             t->name, t->bytes);
    return RT_ERR;
  }
  RtStatus s = copy_check(t, t->bytes, "into", d);
  if (s || t->bytes == 0) return s;
  char what[96];
  snprintf(what, sizeof what, "while filling %s", t->name);
  return RT_CU_WHAT(what, cuMemsetD32_v2, (t->ptr, word, t->bytes / 4));
}

RtStatus rt_tensor_fill_bits(RtDevTensor *t, IrDType dt, uint64_t bits, int64_t n, Diag *d) {
  if (n <= 0) return RT_OK;
  if ((uint64_t)n * (uint64_t)ir_dtype_bytes(dt) > t->bytes) {
    ir_error(d, no_loc, "cannot fill %lld %s elements of %s: it holds %zu bytes",
             (long long)n, ir_dtype_name(dt), t->name, t->bytes);
    return RT_ERR;
  }
  char what[96];
  snprintf(what, sizeof what, "while filling %s", t->name);
  switch (dt) {
  case IR_DT_F16:
  case IR_DT_BF16:
    return RT_CU_WHAT(what, cuMemsetD16_v2, (t->ptr, (unsigned short)bits, (size_t)n));
  case IR_DT_F64: {
    /* the low words, then the high words (at +4 of every 8 bytes) as a 2-D
     * fill of one word per 8-byte row */
    RtStatus s = RT_CU_WHAT(what, cuMemsetD32_v2, (t->ptr, (unsigned)bits, (size_t)n * 2));
    if (s || (bits >> 32) == (bits & 0xffffffffu)) return s;
    return RT_CU_WHAT(what, cuMemsetD2D32_v2,
                      (t->ptr + 4, 8, (unsigned)(bits >> 32), 1, (size_t)n));
  }
  default:
    return RT_CU_WHAT(what, cuMemsetD32_v2, (t->ptr, (unsigned)bits, (size_t)n));
  }
}

void rt_tensor_free(RtDevTensor *t) {
  if (t->ptr) {
    /* Memory of a closed session went with its context. */
    if (t->epoch == rt_cuda_epoch()) {
      /* Freeing has no caller to report to: a failure here means the context
       * is already broken, and the next checked call will say so. */
      Diag quiet;
      ir_diag_init(&quiet, NULL);
      if (rt_cuda_open(&quiet) == RT_OK)
        rt_cuda_api()->cuMemFree_v2(t->ptr);
      ir_diag_free(&quiet);
    }
    atomic_fetch_sub(&M.live_bytes, (uint64_t)t->bytes);
    atomic_fetch_sub(&M.live_tensors, 1);
  }
  char name[sizeof t->name];
  memcpy(name, t->name, sizeof name);
  memset(t, 0, sizeof *t);
  memcpy(t->name, name, sizeof name);
}

/* ---- pinned host memory ---- */

RtStatus rt_host_pin(void *host, size_t bytes, Diag *d) {
  if (!host || bytes == 0) return RT_OK;
  RtStatus s = rt_cuda_open(d);
  if (s != RT_OK) return s;
  char what[96];
  snprintf(what, sizeof what, "while pinning %zu bytes of host memory", bytes);
  return RT_CU_WHAT(what, cuMemHostRegister_v2, (host, bytes, 0));
}

void rt_host_unpin(void *host) {
  if (!host) return;
  /* Like rt_tensor_free: nobody to report to, and the memory stays usable
   * as ordinary memory whatever the driver says. */
  Diag quiet;
  ir_diag_init(&quiet, NULL);
  if (rt_cuda_open(&quiet) == RT_OK) rt_cuda_api()->cuMemHostUnregister(host);
  ir_diag_free(&quiet);
}

/* Whether p .. p + bytes is device memory this device may use (its own,
 * or a peer's mapped read-write): a caller's pointer, checked before a
 * kernel reads it. */
RtStatus rt_pointer_check(RtDevPtr p, size_t bytes, const char *what, Diag *d) {
  RtStatus s = rt_cuda_open(d);
  if (s != RT_OK) return s;
  unsigned int type = 0;
  int ordinal = -1;
  CUdeviceptr start = 0;
  size_t size = 0;
  CUpointer_attribute attrs[] = {CU_POINTER_ATTRIBUTE_MEMORY_TYPE,
                                 CU_POINTER_ATTRIBUTE_DEVICE_ORDINAL,
                                 CU_POINTER_ATTRIBUTE_RANGE_START_ADDR,
                                 CU_POINTER_ATTRIBUTE_RANGE_SIZE};
  void *data[] = {&type, &ordinal, &start, &size};
  /* cuPointerGetAttributes answers an address it does not know with
   * CUDA_SUCCESS and zeroed values (type 0); some drivers answer
   * CUDA_ERROR_INVALID_VALUE instead: the same message for both */
  CUresult r = rt_cuda_api()->cuPointerGetAttributes(4, attrs, data, p);
  if (r == CUDA_ERROR_INVALID_VALUE) type = 0;
  else if ((s = rt_cuda_check(r, "cuPointerGetAttributes", what, d)) != RT_OK) return s;
  const RtDeviceInfo *dev = rt_cuda_device();
  if (type == 0) {
    ir_error(d, (Loc){0}, "%s: address 0x%llx is not memory CUDA knows (a host "
             "pointer, or freed memory): gop's device runs take device memory",
             what, (unsigned long long)p);
    return RT_ERR;
  }
  if (type == CU_MEMORYTYPE_HOST) {
    ir_error(d, (Loc){0}, "%s: address 0x%llx is page-locked host memory, not "
             "device memory", what, (unsigned long long)p);
    return RT_ERR;
  }
  if (type == CU_MEMORYTYPE_DEVICE && ordinal != dev->ordinal) {
    /* a peer's memory mapped read-write into this device's address space
     * (CUDA's virtual memory management, as torch's symmetric memory maps
     * it; gop.distributed's peer transport) is read in place over NVLink */
    int access = 0;
    CUpointer_attribute a = CU_POINTER_ATTRIBUTE_ACCESS_FLAGS;
    void *ad[] = {&access};
    if (rt_cuda_api()->cuPointerGetAttributes(1, &a, ad, p) == CUDA_SUCCESS &&
        access == CU_MEM_ACCESS_FLAGS_PROT_READWRITE)
      return RT_OK;
    ir_error(d, (Loc){0}, "%s: address 0x%llx is memory of device %d; gop runs on "
             "device %d (GOP_CUDA_DEVICE)", what, (unsigned long long)p, ordinal,
             dev->ordinal);
    return RT_ERR;
  }
  if (size && (p < start || p - start + bytes > size)) {
    ir_error(d, (Loc){0}, "%s: %zu bytes at 0x%llx run past the end of its "
             "allocation (%zu bytes from 0x%llx)", what, bytes, (unsigned long long)p,
             size, (unsigned long long)start);
    return RT_ERR;
  }
  return RT_OK;
}
