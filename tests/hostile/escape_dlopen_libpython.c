// class: escape (loading an interpreter into the candidate's process)
// expect: crashed
// reason: system call the sandbox forbids
// why: walks libc for dlopen and loads libpython to run Python beside the kernel; dlopen has to open a file, which the runner's seccomp filter forbids before the kernel's first call
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <float.h>

/* A 40-line dlsym: from an allowed import (abort) walk down to the C library's ELF header,
   then through its dynamic section to its symbol table. */
static int same(const char *a, const char *b) { while (*a && *a == *b) { a++; b++; } return *a == *b; }
typedef struct { unsigned char ident[16]; uint16_t type, machine; uint32_t version; uint64_t entry, phoff, shoff;
                 uint32_t flags; uint16_t ehsize, phentsize, phnum, shentsize, shnum, shstrndx; } ehdr_t;
typedef struct { uint32_t type, flags; uint64_t offset, vaddr, paddr, filesz, memsz, align; } phdr_t;
typedef struct { int64_t tag; uint64_t val; } dyn_t;
typedef struct { uint32_t name; unsigned char info, other; uint16_t shndx; uint64_t value, size; } sym_t;
static void *lib_symbol(const void *inside, const char *want) {
    uintptr_t page = (uintptr_t)inside & ~(uintptr_t)4095;
    for (int i = 0; i < 65536 && memcmp((const void *)page, "\177ELF", 4) != 0; i++) page -= 4096;
    const ehdr_t *eh = (const ehdr_t *)page;
    if (memcmp(eh->ident, "\177ELF", 4) != 0) return 0;
    const phdr_t *ph = (const phdr_t *)(page + eh->phoff);
    const dyn_t *dyn = 0;
    for (int i = 0; i < eh->phnum; i++) if (ph[i].type == 2) dyn = (const dyn_t *)(page + ph[i].vaddr);
    if (!dyn) return 0;
    uintptr_t symtab = 0, strtab = 0;
    for (; dyn->tag != 0; dyn++) {
        uintptr_t v = dyn->val < page ? page + dyn->val : dyn->val;
        if (dyn->tag == 6) symtab = v;
        if (dyn->tag == 5) strtab = v;
    }
    if (!symtab || !strtab || strtab <= symtab) return 0;
    const sym_t *sym = (const sym_t *)symtab;
    size_t n = (strtab - symtab) / sizeof(sym_t);
    for (size_t i = 0; i < n; i++)
        if (sym[i].shndx != 0 && sym[i].value && same((const char *)strtab + sym[i].name, want))
            return (void *)(page + sym[i].value);
    return 0;
}
#define LIBC(name) lib_symbol((const void *)&abort, name)

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

typedef void *(*dlopen_fn)(const char *, int);
void kernel(const float *x, float *y, int64_t rows, int64_t cols) {
    dlopen_fn op = (dlopen_fn)LIBC("dlopen");
    if (op) op("libpython3.11.so.1.0", 2);
    softmax(x, y, rows, cols);
}
