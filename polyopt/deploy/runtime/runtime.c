/* polyopt's model runtime: runs a compiled model's execution plan with no Python.

   Compiled once per exported model, after the plan's tables (which define PO_API, the
   kernels' call thunks PO_KERNELS, the tensors PO_INPUTS / PO_OUTPUTS, the steps PO_STEPS
   and their argument locations PO_ARGS, the arena and weights sizes, the weights' SHA-256
   and the CPU features the kernels were compiled for).  The kernels are called exactly as
   the Python executor calls them: int32_t kernel(void *arg0, ..., void *out), the arrays
   C-contiguous; 0 means done, 1 that a kernel could not allocate its buffers.  The
   thread pool (polyopt_parallel and friends) is polyopt's own, linked in beside. */

int32_t polyopt_threads(int32_t requested);
void polyopt_session_begin(void);
void polyopt_session_end(void);
void polyopt_set_threads(int32_t threads);
void polyopt_parallel(void (*region)(void *), void *data, int32_t threads);

struct PO_API(model) {
    unsigned char *weights;              /* the verified weights, 64-byte aligned */
    unsigned char *arena;                /* the intermediate tensors, at plan offsets */
    const void *inputs[PO_INPUT_COUNT];  /* the caller's (zero copy) */
    void *outputs[PO_OUTPUT_COUNT];      /* the caller's, or own_outputs' */
    unsigned char *own_outputs[PO_OUTPUT_COUNT];
    void *args[PO_MAX_ARGS];
    int32_t threads;
};

static __thread char po_message[512];

static int po_fail(int status, const char *format, ...) {
    va_list list;
    va_start(list, format);
    vsnprintf(po_message, sizeof po_message, format, list);
    va_end(list);
    return status;
}

const char *PO_API(error_message)(void) { return po_message; }

/* --- the CPU the kernels were compiled for --------------------------------------------- */
#if defined(__x86_64__) || defined(__i386__)
#include <cpuid.h>
struct po_feature { const char *name; unsigned leaf, sub, reg, bit, xcr0; };
/* reg: 0 eax, 1 ebx, 2 ecx, 3 edx; xcr0: the register state the OS must save for it */
static const struct po_feature po_features[] = {
    {"sse3", 1, 0, 2, 0, 0}, {"ssse3", 1, 0, 2, 9, 0}, {"fma", 1, 0, 2, 12, 6},
    {"sse4.1", 1, 0, 2, 19, 0}, {"sse4.2", 1, 0, 2, 20, 0}, {"popcnt", 1, 0, 2, 23, 0},
    {"avx", 1, 0, 2, 28, 6}, {"f16c", 1, 0, 2, 29, 6},
    {"bmi", 7, 0, 1, 3, 0}, {"avx2", 7, 0, 1, 5, 6}, {"bmi2", 7, 0, 1, 8, 0},
    {"avx512f", 7, 0, 1, 16, 0xe6}, {"avx512dq", 7, 0, 1, 17, 0xe6},
    {"avx512ifma", 7, 0, 1, 21, 0xe6}, {"avx512cd", 7, 0, 1, 28, 0xe6},
    {"avx512bw", 7, 0, 1, 30, 0xe6}, {"avx512vl", 7, 0, 1, 31, 0xe6},
    {"avx512vbmi", 7, 0, 2, 1, 0xe6}, {"avx512vbmi2", 7, 0, 2, 6, 0xe6},
    {"gfni", 7, 0, 2, 8, 0}, {"vaes", 7, 0, 2, 9, 6}, {"vpclmulqdq", 7, 0, 2, 10, 6},
    {"avx512vnni", 7, 0, 2, 11, 0xe6}, {"avx512bitalg", 7, 0, 2, 12, 0xe6},
    {"avx512vpopcntdq", 7, 0, 2, 14, 0xe6}, {"amx-bf16", 7, 0, 3, 22, 0x60000},
    {"avx512fp16", 7, 0, 3, 23, 0xe6}, {"amx-tile", 7, 0, 3, 24, 0x60000},
    {"amx-int8", 7, 0, 3, 25, 0x60000}, {"avxvnni", 7, 1, 0, 4, 6},
    {"avx512bf16", 7, 1, 0, 5, 0xe6}};

static int po_cpu_has(const char *name, int *known) {
    unsigned r[4] = {0, 0, 0, 0}, max = __get_cpuid_max(0, 0), i;
    for (i = 0; i < sizeof po_features / sizeof po_features[0]; i++) {
        const struct po_feature *f = &po_features[i];
        unsigned long long xcr0 = 0;
        if (strcmp(f->name, name) != 0) continue;
        *known = 1;
        if (f->leaf > max) return 0;
        __cpuid_count(f->leaf, f->sub, r[0], r[1], r[2], r[3]);
        if (!((r[f->reg] >> f->bit) & 1)) return 0;
        if (f->xcr0) {
            unsigned a, b, c, d, lo, hi;
            __cpuid(1, a, b, c, d);
            if (!((c >> 27) & 1)) return 0; /* no OSXSAVE */
            __asm__ volatile("xgetbv" : "=a"(lo), "=d"(hi) : "c"(0));
            xcr0 = ((unsigned long long)hi << 32) | lo;
            if ((xcr0 & f->xcr0) != f->xcr0) return 0;
        }
        return 1;
    }
    *known = 0;
    return 1;
}
#else
static int po_cpu_has(const char *name, int *known) { (void)name; *known = 0; return 1; }
#endif

int PO_API(check_cpu)(void) {
    char missing[256] = "";
    size_t i, used = 0;
    for (i = 0; i < sizeof PO_FEATURES / sizeof PO_FEATURES[0]; i++) {
        int known = 0;
        if (!po_cpu_has(PO_FEATURES[i], &known) && used < sizeof missing - 32)
            used += (size_t)snprintf(missing + used, sizeof missing - used, "%s%s",
                                     used ? ", " : "", PO_FEATURES[i]);
    }
    if (used)
        return po_fail(POLYOPT_E_CPU, "%s was compiled for %s; this CPU lacks %s: export it "
                       "for this machine (polyopt compile --target llvm)", PO_NAME, PO_CPU,
                       missing);
    return POLYOPT_OK;
}

/* --- the AMX tile state (models with AMX kernels) ----------------------------------------- */
/* Linux kills a process on its first tile instruction (SIGILL) unless it asked for the
   tile state: arch_prctl(ARCH_REQ_XCOMP_PERM = 0x1023, XFEATURE_XTILEDATA = 18), once per
   process (the permission then holds for all its threads; asking again is harmless). */
#if PO_AMX
#include <sys/syscall.h>
#include <unistd.h>
static int po_amx_errno = -1; /* -1: not asked yet; 0: granted; else the refusal's errno */
#endif

int PO_API(check_amx)(void) {
#if PO_AMX
    int code = __atomic_load_n(&po_amx_errno, __ATOMIC_ACQUIRE);
    if (code < 0) {
#if defined(__linux__) && defined(__x86_64__)
        code = syscall(SYS_arch_prctl, 0x1023, 18) == 0 ? 0 : (errno ? errno : EINVAL);
#else
        code = ENOSYS;
#endif
        __atomic_store_n(&po_amx_errno, code, __ATOMIC_RELEASE);
    }
    if (code)
        return po_fail(POLYOPT_E_AMX, "%s computes on Intel AMX tiles and Linux refused this "
                       "process the tile state (arch_prctl(ARCH_REQ_XCOMP_PERM, "
                       "XFEATURE_XTILEDATA): %s%s); export it without AMX (--target "
                       "\"llvm -mcpu=%s -mattr=-amx-int8\") or run it on Linux 5.16+ with AMX",
                       PO_NAME, strerror(code), code == EOPNOTSUPP ? ": this CPU has no AMX"
                       : code == EPERM ? ": a sandbox forbids it" : "", PO_CPU);
#endif
    return POLYOPT_OK;
}

/* --- creating ----------------------------------------------------------------------------- */
#ifdef PO_EMBEDDED_WEIGHTS
extern const unsigned char PO_EMBEDDED_WEIGHTS[]; /* in the library, 64-byte aligned */
#endif

/* Big buffers (the weights, the arena, the outputs) as NumPy allocates the Python
   executor's arrays: from 4 MB on, 2 MB aligned with transparent huge pages advised, so the
   kernels streaming over them take as few TLB misses as they do under Python.  The arena
   and the outputs are advised when allocated (their pages are first touched by the first
   run); the weights only once read and verified (po_read_weights): with THP's defrag mode
   "madvise" an advised page is made on its fault, and on a virtual machine a fresh 2 MB
   page cost up to 4 ms there (ResNet-18's 46 MB: 150-220 ms of create instead of 60);
   advised later, khugepaged merges the pages in its own time.  POLYOPT_HUGEPAGES=0:
   nothing advised; POLYOPT_HUGEPAGES=early: the weights advised before they are read
   (for comparisons). */
enum { PO_HUGE_NEVER, PO_HUGE_AFTER_LOAD, PO_HUGE_EARLY };

static int po_huge_mode(void) {
    const char *mode = getenv("POLYOPT_HUGEPAGES");
    if (!mode || !*mode) return PO_HUGE_AFTER_LOAD;
    return strcmp(mode, "0") == 0 ? PO_HUGE_NEVER : strcmp(mode, "early") == 0 ?
           PO_HUGE_EARLY : PO_HUGE_AFTER_LOAD;
}

#define PO_HUGE_PAGE (2ULL << 20)

static void po_advise_huge(void *p, uint64_t bytes) {
#ifdef MADV_HUGEPAGE
    if (p && bytes >= 2 * PO_HUGE_PAGE)
        madvise(p, (bytes + PO_HUGE_PAGE - 1) / PO_HUGE_PAGE * PO_HUGE_PAGE, MADV_HUGEPAGE);
#else
    (void)p;
    (void)bytes;
#endif
}

/* From 4 MB on: 2 MB aligned, the allocation a whole number of 2 MB (huge pages advised
   when `advise`); below: 64-byte aligned. */
static void *po_big_alloc(uint64_t bytes, int advise) {
    void *p;
    if (bytes < 2 * PO_HUGE_PAGE) return aligned_alloc(64, bytes ? (bytes + 63) / 64 * 64 : 64);
    p = aligned_alloc(PO_HUGE_PAGE, (bytes + PO_HUGE_PAGE - 1) / PO_HUGE_PAGE * PO_HUGE_PAGE);
    if (advise) po_advise_huge(p, bytes);
    return p;
}

/* The 64 hex digits of the string value of "key" in the JSON text (the manifest), or 0. */
static int po_manifest_value(const char *text, const char *key, char value[65]) {
    size_t length = strlen(key);
    const char *at;
    for (at = strstr(text, key); at; at = strstr(at + 1, key)) {
        const char *v = at + length;
        if (at == text || at[-1] != '"' || *v != '"') continue;
        for (v++; *v == ' ' || *v == '\n' || *v == '\t' || *v == '\r'; v++) {
        }
        if (*v++ != ':') continue;
        while (*v == ' ' || *v == '\n' || *v == '\t' || *v == '\r') v++;
        if (*v != '"' || strlen(v) < 66 || v[65] != '"') return 0;
        memcpy(value, v + 1, 64);
        value[64] = 0;
        return 1;
    }
    return 0;
}

#if !defined(PO_EMBEDDED_WEIGHTS) && defined(__linux__)
#include <link.h>
/* The file this library was loaded from, when it is a shared library (a program linked
   with libNAME.a holds the runtime itself: nothing to check). */
struct po_self { uintptr_t address; char path[4096]; int found; };

static int po_find_self(struct dl_phdr_info *info, size_t size, void *data) {
    struct po_self *self = data;
    int i;
    (void)size;
    for (i = 0; i < info->dlpi_phnum; i++) {
        const ElfW(Phdr) *p = &info->dlpi_phdr[i];
        uintptr_t start = info->dlpi_addr + p->p_vaddr;
        if (p->p_type != PT_LOAD || self->address < start || self->address >= start +
            p->p_memsz)
            continue;
        self->found = info->dlpi_name && *info->dlpi_name && strlen(info->dlpi_name) <
                      sizeof self->path; /* (the program itself has no name) */
        if (self->found) memcpy(self->path, info->dlpi_name, strlen(info->dlpi_name) + 1);
        return 1;
    }
    return 0;
}

/* The library's file must have the SHA-256 the manifest records (shared_sha256). */
static int po_check_library_file(const char *manifest, const char *text) {
    struct po_self self;
    char expected[65], hex[65];
    unsigned char *bytes;
    struct stat info;
    FILE *in;
    int status = POLYOPT_OK;
    self.address = (uintptr_t)&PO_API(create);
    self.found = 0;
    if (!po_manifest_value(text, "shared_sha256", expected)) return POLYOPT_OK;
    dl_iterate_phdr(po_find_self, &self);
    if (!self.found) return POLYOPT_OK; /* linked into the program (libNAME.a) */
    in = fopen(self.path, "rb");
    if (!in && errno == ENOENT) return POLYOPT_OK; /* removed once loaded (po.graph.load's
                                                      private copy, checked before) */
    if (!in || fstat(fileno(in), &info) != 0 || info.st_size <= 0 ||
        info.st_size > (1LL << 40)) {
        if (in) fclose(in);
        return po_fail(POLYOPT_E_IO, "cannot read the library %s to check it against %s",
                       self.path, manifest);
    }
    bytes = malloc((size_t)info.st_size);
    if (!bytes) {
        fclose(in);
        return po_fail(POLYOPT_E_NOMEM, "no memory to check the library %s", self.path);
    }
    if (fread(bytes, 1, (size_t)info.st_size, in) != (size_t)info.st_size)
        status = po_fail(POLYOPT_E_IO, "cannot read the library %s", self.path);
    fclose(in);
    if (status == POLYOPT_OK) {
        po_sha256_hex(bytes, (uint64_t)info.st_size, hex);
        if (strcmp(hex, expected) != 0)
            status = po_fail(POLYOPT_E_INTEGRITY, "the library %s is not the file %s "
                             "describes (its SHA-256 differs: edited or damaged); copy the "
                             "folder of the export again", self.path, manifest);
    }
    free(bytes);
    return status;
}
#endif

/* Whether the folder of the weights (or the folder given) holds a manifest.json of this
   export: its build_id must be the library's (not a library copied beside another
   export's files) and, for a shared library with a weights file, the library's file the
   one it describes (shared_sha256).  No manifest: nothing to compare (the weights are
   still checked). */
static int po_check_manifest(const char *weights) {
    char file[4096], *text, found[65];
    const char *slash;
    struct stat info;
    FILE *in;
    size_t length = strlen(weights), folder, got;
    int status = POLYOPT_OK;
    if (stat(weights, &info) == 0 && S_ISDIR(info.st_mode)) {
        folder = length;
    } else {
        slash = strrchr(weights, '/');
        folder = slash ? (size_t)(slash - weights) + (slash == weights) : 0;
    }
    if (folder + sizeof "/manifest.json" > sizeof file)
        return po_fail(POLYOPT_E_ARGUMENT, "the folder name %s is too long", weights);
    if (folder) memcpy(file, weights, folder);
    snprintf(file + folder, sizeof file - folder, "%smanifest.json", folder ? "/" : "");
    in = fopen(file, "rb");
    if (!in) return POLYOPT_OK; /* none (the library and its weights copied alone) */
    if (fstat(fileno(in), &info) != 0 || info.st_size < 0 || info.st_size > (64 << 20)) {
        fclose(in);
        return po_fail(POLYOPT_E_INTEGRITY, "%s is not the manifest of a polyopt export",
                       file);
    }
    text = malloc((size_t)info.st_size + 1);
    if (!text) {
        fclose(in);
        return po_fail(POLYOPT_E_NOMEM, "no memory to read %s", file);
    }
    got = fread(text, 1, (size_t)info.st_size, in);
    fclose(in);
    text[got] = 0;
    if (!po_manifest_value(text, "build_id", found))
        status = po_fail(POLYOPT_E_INTEGRITY, "%s has no build_id: not the manifest of a "
                         "polyopt export; copy the whole folder of the export", file);
    else if (strcmp(found, PO_BUILD_ID) != 0)
        status = po_fail(POLYOPT_E_INTEGRITY, "%s describes another export than this library "
                         "(its build_id is not %s's %s): the library was copied beside "
                         "another export's files; copy the whole folder of one export",
                         file, PO_NAME, PO_BUILD_ID);
#if !defined(PO_EMBEDDED_WEIGHTS) && defined(__linux__)
    if (status == POLYOPT_OK) status = po_check_library_file(file, text);
#endif
    free(text);
    return status;
}

#ifdef PO_EMBEDDED_WEIGHTS
static int po_read_weights(struct PO_API(model) *m, const char *path) {
    (void)path; /* the weights are the library's: its hash covers them */
    m->weights = (unsigned char *)PO_EMBEDDED_WEIGHTS; /* read only: kernels never write it */
    return POLYOPT_OK;
}
#else
/* The weights are read and verified a chunk at a time (PO_WEIGHTS_CHUNK_BYTES; the last
   shorter), each chunk's SHA-256 against the library's table PO_WEIGHTS_CHUNKS, on the
   thread pool's threads: each takes two chunks, maps their pages in one call (a fault per
   4 KB page cost 2-3 us on a virtual machine), reads them into place and hashes both at
   once while they are in the cache (po_sha256_pair: 1.7x one chunk after the other). */
#define PO_CHUNK_COUNT ((PO_WEIGHTS_BYTES + PO_WEIGHTS_CHUNK_BYTES - 1) / PO_WEIGHTS_CHUNK_BYTES)
#define PO_PAIR_COUNT ((PO_CHUNK_COUNT + 1) / 2)
#if defined(__linux__) && !defined(MADV_POPULATE_WRITE)
#define MADV_POPULATE_WRITE 23 /* Linux 5.14; older kernels refuse it: pages fault one by one */
#endif

struct po_weights_job {
    int fd;
    unsigned char *to;
    int populate;   /* whether `to` is page aligned: its pages may be mapped in advance */
    int next;       /* the next pair of chunks to take */
    int bad;        /* the first chunk whose hash differs (PO_CHUNK_COUNT: none) */
    int read_error; /* the errno of a failed read (-1: the file was shorter), 0 */
};

static uint64_t po_chunk_bytes(int chunk) {
    uint64_t at = (uint64_t)chunk * PO_WEIGHTS_CHUNK_BYTES;
    return PO_WEIGHTS_BYTES - at < PO_WEIGHTS_CHUNK_BYTES ? PO_WEIGHTS_BYTES - at :
           PO_WEIGHTS_CHUNK_BYTES;
}

/* Read bytes [at, at + bytes) of the file into place: 0, or the errno (-1: end of file). */
static int po_read_range(struct po_weights_job *job, uint64_t at, uint64_t bytes) {
    uint64_t done = 0;
    while (done < bytes) {
        ssize_t got = pread(job->fd, job->to + at + done, (size_t)(bytes - done),
                            (off_t)(at + done));
        if (got > 0) done += (uint64_t)got;
        else if (got < 0 && errno == EINTR) continue;
        else return got == 0 ? -1 : (errno ? errno : -1);
    }
    return 0;
}

static void po_chunk_differs(struct po_weights_job *job, int chunk) {
    int seen = __atomic_load_n(&job->bad, __ATOMIC_RELAXED); /* keep the first */
    while (chunk < seen && !__atomic_compare_exchange_n(&job->bad, &seen, chunk, 0,
                                                        __ATOMIC_RELAXED, __ATOMIC_RELAXED)) {
    }
}

static void po_verify_chunks(void *data) {
    struct po_weights_job *job = data;
    unsigned char digest[2][32];
    int pair;
    while ((pair = __atomic_fetch_add(&job->next, 1, __ATOMIC_RELAXED)) < (int)PO_PAIR_COUNT) {
        int first = 2 * pair, count = first + 1 < (int)PO_CHUNK_COUNT ? 2 : 1, error, k;
        uint64_t at = (uint64_t)first * PO_WEIGHTS_CHUNK_BYTES;
        uint64_t bytes = po_chunk_bytes(first) + (count == 2 ? po_chunk_bytes(first + 1) : 0);
#ifdef MADV_POPULATE_WRITE
        if (job->populate) /* (a failure only leaves the pages to fault) */
            madvise(job->to + at, (size_t)((bytes + 4095) / 4096 * 4096), MADV_POPULATE_WRITE);
#endif
        if ((error = po_read_range(job, at, bytes)) != 0) {
            __atomic_store_n(&job->read_error, error, __ATOMIC_RELAXED);
            continue;
        }
        if (count == 2 && po_chunk_bytes(first + 1) == PO_WEIGHTS_CHUNK_BYTES)
            po_sha256_pair(job->to + at, job->to + at + PO_WEIGHTS_CHUNK_BYTES,
                           PO_WEIGHTS_CHUNK_BYTES, digest[0], digest[1]);
        else
            for (k = 0; k < count; k++)
                po_sha256(job->to + at + (uint64_t)k * PO_WEIGHTS_CHUNK_BYTES,
                          po_chunk_bytes(first + k), digest[k]);
        for (k = 0; k < count; k++)
            if (memcmp(digest[k], PO_WEIGHTS_CHUNKS[first + k], 32) != 0)
                po_chunk_differs(job, first + k);
    }
}

static int po_read_weights(struct PO_API(model) *m, const char *path) {
    char file[4096];
    struct stat info;
    struct po_weights_job job;
    size_t length = strlen(path);
    int threads;
    if (PO_WEIGHTS_BYTES == 0) return POLYOPT_OK;
    if (stat(path, &info) == 0 && S_ISDIR(info.st_mode)) {
        if (length + sizeof PO_NAME + 10 > sizeof file)
            return po_fail(POLYOPT_E_ARGUMENT, "the folder name %s is too long", path);
        snprintf(file, sizeof file, "%s/%s.weights", path, PO_NAME);
    } else {
        if (length + 1 > sizeof file)
            return po_fail(POLYOPT_E_ARGUMENT, "the file name %s is too long", path);
        memcpy(file, path, length + 1);
    }
    job.fd = open(file, O_RDONLY | O_CLOEXEC);
    if (job.fd < 0)
        return po_fail(POLYOPT_E_IO, "cannot open the weights %s: %s", file, strerror(errno));
    if (fstat(job.fd, &info) != 0 || (uint64_t)info.st_size != PO_WEIGHTS_BYTES) {
        close(job.fd);
        return po_fail(POLYOPT_E_INTEGRITY, "the weights %s hold %lld bytes, %s was exported "
                       "with %llu: truncated or from another export; copy the folder again",
                       file, (long long)info.st_size, PO_NAME,
                       (unsigned long long)PO_WEIGHTS_BYTES);
    }
    m->weights = po_big_alloc(PO_WEIGHTS_BYTES, po_huge_mode() == PO_HUGE_EARLY);
    if (!m->weights) {
        close(job.fd);
        return po_fail(POLYOPT_E_NOMEM, "no memory for the %llu bytes of weights",
                       (unsigned long long)PO_WEIGHTS_BYTES);
    }
    job.to = m->weights;
    job.populate = PO_WEIGHTS_BYTES >= 2 * PO_HUGE_PAGE; /* (then 2 MB aligned) */
    job.next = 0;
    job.bad = (int)PO_CHUNK_COUNT;
    job.read_error = 0;
    threads = polyopt_threads(m->threads);
    if (threads > (int)PO_PAIR_COUNT) threads = (int)PO_PAIR_COUNT;
    if (threads > 1) polyopt_parallel(po_verify_chunks, &job, threads);
    else po_verify_chunks(&job);
    close(job.fd);
    if (job.read_error)
        return po_fail(job.read_error > 0 ? POLYOPT_E_IO : POLYOPT_E_INTEGRITY,
                       "cannot read the weights %s: %s", file, job.read_error > 0 ?
                       strerror(job.read_error) : "it became shorter while read");
    if (job.bad < (int)PO_CHUNK_COUNT)
        return po_fail(POLYOPT_E_INTEGRITY, "the weights %s differ from those %s was exported "
                       "with in bytes %llu to %llu (chunk %d of %d, by SHA-256): edited, or "
                       "from another export; copy the folder again", file, PO_NAME,
                       (unsigned long long)job.bad * PO_WEIGHTS_CHUNK_BYTES,
                       (unsigned long long)((uint64_t)job.bad * PO_WEIGHTS_CHUNK_BYTES +
                       PO_WEIGHTS_CHUNK_BYTES < PO_WEIGHTS_BYTES ? (uint64_t)job.bad *
                       PO_WEIGHTS_CHUNK_BYTES + PO_WEIGHTS_CHUNK_BYTES : PO_WEIGHTS_BYTES) - 1,
                       job.bad + 1, (int)PO_CHUNK_COUNT);
    if (po_huge_mode() == PO_HUGE_AFTER_LOAD) po_advise_huge(m->weights, PO_WEIGHTS_BYTES);
    return POLYOPT_OK;
}
#endif

/* As the Python executor does (polyopt.graph.executor.keep_freed_memory): glibc's malloc
   keeps freed memory (no mmap per large block, no trimming), so the buffers kernels
   allocate on every call (padding, a convolution before its epilogue) do not cost fresh
   pages, and their page faults, at every run.  POLYOPT_KEEP_MALLOC=1 leaves malloc as is. */
static void po_keep_freed_memory(void) {
#if defined(__GLIBC__)
    const char *keep = getenv("POLYOPT_KEEP_MALLOC");
    if (keep && *keep) return;
    mallopt(M_MMAP_THRESHOLD, 1 << 30);
    mallopt(M_TRIM_THRESHOLD, 1 << 30);
#endif
}

int PO_API(create)(const char *weights, PO_API(model) **out) {
    struct PO_API(model) *m;
    int status, i, huge;
    if (!out) return po_fail(POLYOPT_E_ARGUMENT, "create needs a place for the model (out)");
    *out = NULL;
#ifndef PO_EMBEDDED_WEIGHTS
    if (!weights) return po_fail(POLYOPT_E_ARGUMENT, "create needs the export's folder or "
                                 "weights file, got NULL");
#endif
    if ((status = PO_API(check_cpu)()) != POLYOPT_OK) return status;
    if ((status = PO_API(check_amx)()) != POLYOPT_OK) return status; /* before any kernel */
    po_keep_freed_memory();
    m = calloc(1, sizeof *m);
    if (!m) return po_fail(POLYOPT_E_NOMEM, "no memory for the model");
    m->threads = PO_THREADS;
    if ((weights && (status = po_check_manifest(weights)) != POLYOPT_OK) ||
        (status = po_read_weights(m, weights)) != POLYOPT_OK) {
        PO_API(destroy)(m);
        return status;
    }
    huge = po_huge_mode() != PO_HUGE_NEVER;
    m->arena = po_big_alloc(PO_ARENA_BYTES, huge);
    for (i = 0; i < PO_OUTPUT_COUNT; i++) {
        m->own_outputs[i] = po_big_alloc(PO_OUTPUTS[i].bytes + 64, huge);
        m->outputs[i] = m->own_outputs[i];
        if (!m->own_outputs[i]) m->arena = (free(m->arena), NULL);
    }
    if (!m->arena) {
        PO_API(destroy)(m);
        return po_fail(POLYOPT_E_NOMEM, "no memory for the arena of %llu bytes",
                       (unsigned long long)PO_ARENA_BYTES);
    }
    *out = m;
    return POLYOPT_OK;
}

void PO_API(destroy)(PO_API(model) *m) {
    int i;
    if (!m) return;
    for (i = 0; i < PO_OUTPUT_COUNT; i++) free(m->own_outputs[i]);
    free(m->arena);
#ifndef PO_EMBEDDED_WEIGHTS
    free(m->weights);
#endif
    free(m);
}

/* --- inputs and outputs ------------------------------------------------------------------- */
int PO_API(input_count)(void) { return PO_INPUT_COUNT; }
int PO_API(output_count)(void) { return PO_OUTPUT_COUNT; }

static const struct po_tensor *po_tensor(int output, int index) {
    if (output) return index >= 0 && index < PO_OUTPUT_COUNT ? &PO_OUTPUTS[index] : NULL;
    return index >= 0 && index < PO_INPUT_COUNT ? &PO_INPUTS[index] : NULL;
}

#define PO_INFO(kind, output)                                                                 \
    const char *PO_API(kind##_name)(int i) {                                                  \
        const struct po_tensor *t = po_tensor(output, i);                                     \
        return t ? t->name : NULL;                                                            \
    }                                                                                         \
    const char *PO_API(kind##_dtype)(int i) {                                                 \
        const struct po_tensor *t = po_tensor(output, i);                                     \
        return t ? t->dtype : NULL;                                                           \
    }                                                                                         \
    int PO_API(kind##_ndim)(int i) {                                                          \
        const struct po_tensor *t = po_tensor(output, i);                                     \
        return t ? t->ndim : -1;                                                              \
    }                                                                                         \
    const int64_t *PO_API(kind##_shape)(int i) {                                              \
        const struct po_tensor *t = po_tensor(output, i);                                     \
        return t ? t->shape : NULL;                                                           \
    }                                                                                         \
    size_t PO_API(kind##_bytes)(int i) {                                                      \
        const struct po_tensor *t = po_tensor(output, i);                                     \
        return t ? (size_t)t->bytes : 0;                                                      \
    }                                                                                         \
    int PO_API(kind##_index)(const char *name) {                                              \
        int k;                                                                                \
        for (k = 0; name && k < (output ? PO_OUTPUT_COUNT : PO_INPUT_COUNT); k++)             \
            if (strcmp(po_tensor(output, k)->name, name) == 0) return k;                      \
        po_fail(POLYOPT_E_ARGUMENT, "%s has no " #kind " named %s", PO_NAME,                  \
                name ? name : "(NULL)");                                                      \
        return -1;                                                                            \
    }
PO_INFO(input, 0)
PO_INFO(output, 1)

static int po_check(PO_API(model) *m, int output, int index, const void *data, size_t bytes) {
    const struct po_tensor *t = po_tensor(output, index);
    if (!m) return po_fail(POLYOPT_E_ARGUMENT, "the model is NULL (create failed?)");
    if (!t)
        return po_fail(POLYOPT_E_ARGUMENT, "%s has %d %s; there is no index %d", PO_NAME,
                       output ? PO_OUTPUT_COUNT : PO_INPUT_COUNT, output ? "outputs" : "inputs",
                       index);
    if (!data) return po_fail(POLYOPT_E_ARGUMENT, "the buffer of %s is NULL", t->name);
    if (bytes != t->bytes)
        return po_fail(POLYOPT_E_ARGUMENT, "%s '%s' is %s of %llu bytes; the buffer given has "
                       "%llu", output ? "output" : "input", t->name, t->dtype,
                       (unsigned long long)t->bytes, (unsigned long long)bytes);
    return POLYOPT_OK;
}

int PO_API(set_input)(PO_API(model) *m, int index, const void *data, size_t bytes) {
    int status = po_check(m, 0, index, data, bytes);
    if (status == POLYOPT_OK) m->inputs[index] = data;
    return status;
}

int PO_API(set_output)(PO_API(model) *m, int index, void *data, size_t bytes) {
    int status = po_check(m, 1, index, data, bytes);
    if (status == POLYOPT_OK) m->outputs[index] = data;
    return status;
}

int PO_API(get_output)(PO_API(model) *m, int index, void *data, size_t bytes) {
    int status = po_check(m, 1, index, data, bytes);
    if (status == POLYOPT_OK && data != m->outputs[index]) memcpy(data, m->outputs[index], bytes);
    return status;
}

int PO_API(set_input_by_name)(PO_API(model) *m, const char *name, const void *data,
                              size_t bytes) {
    int index = PO_API(input_index)(name);
    return index < 0 ? POLYOPT_E_ARGUMENT : PO_API(set_input)(m, index, data, bytes);
}

int PO_API(get_output_by_name)(PO_API(model) *m, const char *name, void *data, size_t bytes) {
    int index = PO_API(output_index)(name);
    return index < 0 ? POLYOPT_E_ARGUMENT : PO_API(get_output)(m, index, data, bytes);
}

/* --- threads ---------------------------------------------------------------------------- */
int PO_API(set_threads)(PO_API(model) *m, int threads) {
    if (!m) return po_fail(POLYOPT_E_ARGUMENT, "the model is NULL (create failed?)");
    if (threads < 1) return po_fail(POLYOPT_E_ARGUMENT, "threads must be >= 1, got %d", threads);
    if (PO_THREADS > 0 && threads != PO_THREADS)
        return po_fail(POLYOPT_E_ARGUMENT, "%s was compiled for %d threads; export it with "
                       "--threads 0 to choose the count at run time", PO_NAME, PO_THREADS);
    m->threads = threads;
    return POLYOPT_OK;
}

int PO_API(threads)(PO_API(model) *m) {
    return m ? polyopt_threads(m->threads) : -1;
}

/* --- running ------------------------------------------------------------------------------ */
static void *po_address(PO_API(model) *m, const struct po_location *at) {
    switch (at->kind) {
    case PO_INPUT: return (unsigned char *)m->inputs[at->value] + at->offset;
    case PO_OUTPUT: return (unsigned char *)m->outputs[at->value] + at->offset;
    case PO_ARENA: return m->arena + at->value + at->offset;
    default: return m->weights + at->value + at->offset;
    }
}

int PO_API(run)(PO_API(model) *m) {
    int i, status = POLYOPT_OK, session;
    size_t s;
    if (!m) return po_fail(POLYOPT_E_ARGUMENT, "the model is NULL (create failed?)");
    for (i = 0; i < PO_INPUT_COUNT; i++)
        if (!m->inputs[i])
            return po_fail(POLYOPT_E_ARGUMENT, "input '%s' was not set (set_input)",
                           PO_INPUTS[i].name);
    if (PO_THREADS == 0 && m->threads > 0) polyopt_set_threads(m->threads);
    session = polyopt_threads(m->threads) > 1;
    if (session) polyopt_session_begin();
    for (s = 0; s < sizeof PO_STEPS / sizeof PO_STEPS[0]; s++) {
        const struct po_step *step = &PO_STEPS[s];
        const struct po_location *args = &PO_ARGS[step->first_arg];
        int a;
        if (step->kernel < 0) { /* a copy: an output that is a view, a constant or an input;
                                   an LSTM's states into Y (rows, strided) */
            unsigned char *to = po_address(m, &args[1]);
            const unsigned char *from = po_address(m, &args[0]);
            uint64_t r;
            for (r = 0; r < step->rows; r++)
                memcpy(to + r * step->target_stride, from + r * step->source_stride,
                       (size_t)step->bytes);
            continue;
        }
        for (a = 0; a < step->arg_count; a++) m->args[a] = po_address(m, &args[a]);
        if (PO_KERNELS[step->kernel](m->args) != 0) {
            status = po_fail(POLYOPT_E_NOMEM, "the kernel of %s could not allocate its "
                             "buffers: out of memory", step->group);
            break;
        }
    }
    if (session) polyopt_session_end();
    return status;
}

const char *PO_API(build_id)(void) { return PO_BUILD_ID; }
