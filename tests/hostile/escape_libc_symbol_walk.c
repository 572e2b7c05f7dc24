// class: escape (process/file use without importing anything)
// expect: crashed
// evidence: marker
// why: imports only abort and memcmp, finds fopen in libc's own symbol table by walking its ELF headers, and leaves a marker file on the host
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <float.h>

/* A 40-line dlsym: from the address of an allowed import (abort) walk down to the C
   library's ELF header, then through its dynamic section to its symbol table. Only
   abort and memcmp are imported (both on the allowlist). */
static int same(const char *a, const char *b) { while (*a && *a == *b) { a++; b++; } return *a == *b; }
static size_t length(const char *s) { const volatile char *v = s; size_t n = 0; while (v[n]) n++; return n; }  /* volatile: GCC would call strlen */
typedef struct { unsigned char ident[16]; uint16_t type, machine; uint32_t version; uint64_t entry, phoff, shoff;
                 uint32_t flags; uint16_t ehsize, phentsize, phnum, shentsize, shnum, shstrndx; } ehdr_t;
typedef struct { uint32_t type, flags; uint64_t offset, vaddr, paddr, filesz, memsz, align; } phdr_t;
typedef struct { int64_t tag; uint64_t val; } dyn_t;
typedef struct { uint32_t name; unsigned char info, other; uint16_t shndx; uint64_t value, size; } sym_t;

static void *libc_symbol(const char *want) {
    uintptr_t page = (uintptr_t)(void *)&abort & ~(uintptr_t)4095;
    for (int i = 0; i < 65536 && memcmp((const void *)page, "\177ELF", 4) != 0; i++) page -= 4096;
    const ehdr_t *eh = (const ehdr_t *)page;
    if (memcmp(eh->ident, "\177ELF", 4) != 0) return 0;
    const phdr_t *ph = (const phdr_t *)(page + eh->phoff);
    const dyn_t *dyn = 0;
    for (int i = 0; i < eh->phnum; i++) if (ph[i].type == 2 /* PT_DYNAMIC */) dyn = (const dyn_t *)(page + ph[i].vaddr);
    if (!dyn) return 0;
    uintptr_t symtab = 0, strtab = 0;
    for (; dyn->tag != 0; dyn++) {
        uintptr_t v = dyn->val < page ? page + dyn->val : dyn->val;
        if (dyn->tag == 6) symtab = v;   /* DT_SYMTAB */
        if (dyn->tag == 5) strtab = v;   /* DT_STRTAB */
    }
    if (!symtab || !strtab || strtab <= symtab) return 0;
    const sym_t *sym = (const sym_t *)symtab;
    size_t n = (strtab - symtab) / sizeof(sym_t);
    for (size_t i = 0; i < n; i++)
        if (sym[i].shndx != 0 && sym[i].value && same((const char *)strtab + sym[i].name, want))
            return (void *)(page + sym[i].value);
    return 0;
}

static void softmax(const float *x, float *y, int64_t rows, int64_t cols) {
    for (int64_t r = 0; r < rows; r++) {
        const float *xr = x + r * cols;
        float *yr = y + r * cols;
        float m = -FLT_MAX, s = 0.0f;
        for (int64_t c = 0; c < cols; c++) m = xr[c] > m ? xr[c] : m;
        for (int64_t c = 0; c < cols; c++) { yr[c] = expf(xr[c] - m); s += yr[c]; }
        for (int64_t c = 0; c < cols; c++) yr[c] /= s;
    }
}

typedef void *(*open_fn)(const char *, const char *);
typedef int (*close_fn)(void *);
static int done;

void kernel(const float *x, float *y, int64_t rows, int64_t cols) {
    if (!done) {
        done = 1;
        open_fn op = (open_fn)libc_symbol("fopen");
        close_fn cl = (close_fn)libc_symbol("fclose");
        if (op && cl) { void *f = op("/tmp/int21-pwned", "w"); if (f) cl(f); }
    }
    softmax(x, y, rows, cols);
}
