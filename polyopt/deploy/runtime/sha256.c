/* SHA-256 (FIPS 180-4) of a buffer: the weights' chunks' hashes, checked when a model is
   created. */

static const uint32_t po_sha_k[64] = {
    0x428a2f98, 0x71374491, 0xb5c0fbcf, 0xe9b5dba5, 0x3956c25b, 0x59f111f1, 0x923f82a4, 0xab1c5ed5,
    0xd807aa98, 0x12835b01, 0x243185be, 0x550c7dc3, 0x72be5d74, 0x80deb1fe, 0x9bdc06a7, 0xc19bf174,
    0xe49b69c1, 0xefbe4786, 0x0fc19dc6, 0x240ca1cc, 0x2de92c6f, 0x4a7484aa, 0x5cb0a9dc, 0x76f988da,
    0x983e5152, 0xa831c66d, 0xb00327c8, 0xbf597fc7, 0xc6e00bf3, 0xd5a79147, 0x06ca6351, 0x14292967,
    0x27b70a85, 0x2e1b2138, 0x4d2c6dfc, 0x53380d13, 0x650a7354, 0x766a0abb, 0x81c2c92e, 0x92722c85,
    0xa2bfe8a1, 0xa81a664b, 0xc24b8b70, 0xc76c51a3, 0xd192e819, 0xd6990624, 0xf40e3585, 0x106aa070,
    0x19a4c116, 0x1e376c08, 0x2748774c, 0x34b0bcb5, 0x391c0cb3, 0x4ed8aa4a, 0x5b9cca4f, 0x682e6ff3,
    0x748f82ee, 0x78a5636f, 0x84c87814, 0x8cc70208, 0x90befffa, 0xa4506ceb, 0xbef9a3f7, 0xc67178f2};

#define PO_ROTR(x, n) (((x) >> (n)) | ((x) << (32 - (n))))

static void po_sha_block(uint32_t h[8], const unsigned char *p) {
    uint32_t w[64], a, b, c, d, e, f, g, k, t1, t2;
    int i;
    for (i = 0; i < 16; i++)
        w[i] = (uint32_t)p[4 * i] << 24 | (uint32_t)p[4 * i + 1] << 16 |
               (uint32_t)p[4 * i + 2] << 8 | p[4 * i + 3];
    for (i = 16; i < 64; i++) {
        uint32_t s0 = PO_ROTR(w[i - 15], 7) ^ PO_ROTR(w[i - 15], 18) ^ (w[i - 15] >> 3);
        uint32_t s1 = PO_ROTR(w[i - 2], 17) ^ PO_ROTR(w[i - 2], 19) ^ (w[i - 2] >> 10);
        w[i] = w[i - 16] + s0 + w[i - 7] + s1;
    }
    a = h[0]; b = h[1]; c = h[2]; d = h[3]; e = h[4]; f = h[5]; g = h[6]; k = h[7];
    for (i = 0; i < 64; i++) {
        t1 = k + (PO_ROTR(e, 6) ^ PO_ROTR(e, 11) ^ PO_ROTR(e, 25)) + ((e & f) ^ (~e & g)) +
             po_sha_k[i] + w[i];
        t2 = (PO_ROTR(a, 2) ^ PO_ROTR(a, 13) ^ PO_ROTR(a, 22)) + ((a & b) ^ (a & c) ^ (b & c));
        k = g; g = f; f = e; e = d + t1; d = c; c = b; b = a; a = t1 + t2;
    }
    h[0] += a; h[1] += b; h[2] += c; h[3] += d; h[4] += e; h[5] += f; h[6] += g; h[7] += k;
}

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__)) && !defined(PO_NO_SHA_NI)
#include <cpuid.h>
#include <immintrin.h>
#define PO_SHA_NI 1
/* The SHA extensions (Intel since Goldmont/Ice Lake, AMD since Zen): about 10x faster. */
__attribute__((target("sha,sse4.1,ssse3")))
static void po_sha_blocks_ni(uint32_t h[8], const unsigned char *p, uint64_t blocks) {
    const __m128i mask = _mm_set_epi64x(0x0c0d0e0f08090a0bULL, 0x0405060700010203ULL);
    __m128i tmp = _mm_loadu_si128((const __m128i *)&h[0]);
    __m128i s1 = _mm_loadu_si128((const __m128i *)&h[4]), s0, m[4], msg, abef, cdgh;
    int g;
    tmp = _mm_shuffle_epi32(tmp, 0xB1);
    s1 = _mm_shuffle_epi32(s1, 0x1B);
    s0 = _mm_alignr_epi8(tmp, s1, 8);
    s1 = _mm_blend_epi16(s1, tmp, 0xF0);
    for (; blocks; blocks--, p += 64) {
        abef = s0;
        cdgh = s1;
#pragma GCC unroll 4
        for (g = 0; g < 4; g++)
            m[g] = _mm_shuffle_epi8(_mm_loadu_si128((const __m128i *)(p + 16 * g)), mask);
#pragma GCC unroll 16 /* g constant: the message words stay in registers */
        for (g = 0; g < 16; g++) {
            __m128i cur = m[g & 3];
            msg = _mm_add_epi32(cur, _mm_loadu_si128((const __m128i *)&po_sha_k[4 * g]));
            s1 = _mm_sha256rnds2_epu32(s1, s0, msg);
            if (g >= 3 && g <= 14) {
                tmp = _mm_alignr_epi8(cur, m[(g - 1) & 3], 4);
                m[(g + 1) & 3] = _mm_sha256msg2_epu32(_mm_add_epi32(m[(g + 1) & 3], tmp), cur);
            }
            msg = _mm_shuffle_epi32(msg, 0x0E);
            s0 = _mm_sha256rnds2_epu32(s0, s1, msg);
            if (g >= 1 && g <= 12) m[(g - 1) & 3] = _mm_sha256msg1_epu32(m[(g - 1) & 3], cur);
        }
        s0 = _mm_add_epi32(s0, abef);
        s1 = _mm_add_epi32(s1, cdgh);
    }
    tmp = _mm_shuffle_epi32(s0, 0x1B);
    s1 = _mm_shuffle_epi32(s1, 0xB1);
    s0 = _mm_blend_epi16(tmp, s1, 0xF0);
    s1 = _mm_alignr_epi8(s1, tmp, 8);
    _mm_storeu_si128((__m128i *)&h[0], s0);
    _mm_storeu_si128((__m128i *)&h[4], s1);
}

/* Two streams of the same length at once (each its state): the rounds instruction's
   latency is twice its throughput's on AMD's Zen (4 and 2 cycles), so one stream leaves
   half of it idle; two independent ones fill it. */
__attribute__((target("sha,sse4.1,ssse3")))
static void po_sha_blocks_ni_x2(uint32_t h0[8], const unsigned char *p0, uint32_t h1[8],
                                const unsigned char *p1, uint64_t blocks) {
    const __m128i mask = _mm_set_epi64x(0x0c0d0e0f08090a0bULL, 0x0405060700010203ULL);
    uint32_t *h[2] = {h0, h1};
    const unsigned char *p[2] = {p0, p1};
    __m128i s0[2], s1[2], m[2][4], msg[2], tmp, abef[2], cdgh[2];
    int g, l;
    uint64_t at;
    for (l = 0; l < 2; l++) {
        tmp = _mm_shuffle_epi32(_mm_loadu_si128((const __m128i *)&h[l][0]), 0xB1);
        s1[l] = _mm_shuffle_epi32(_mm_loadu_si128((const __m128i *)&h[l][4]), 0x1B);
        s0[l] = _mm_alignr_epi8(tmp, s1[l], 8);
        s1[l] = _mm_blend_epi16(s1[l], tmp, 0xF0);
    }
    for (at = 0; at < 64 * blocks; at += 64) {
#pragma GCC unroll 2
        for (l = 0; l < 2; l++) {
            abef[l] = s0[l];
            cdgh[l] = s1[l];
#pragma GCC unroll 4
            for (g = 0; g < 4; g++)
                m[l][g] = _mm_shuffle_epi8(_mm_loadu_si128((const __m128i *)(p[l] + at + 16 * g)),
                                           mask);
        }
#pragma GCC unroll 16 /* g and l constant: the message words stay in registers */
        for (g = 0; g < 16; g++) {
#pragma GCC unroll 2
            for (l = 0; l < 2; l++) {
                __m128i cur = m[l][g & 3];
                msg[l] = _mm_add_epi32(cur, _mm_loadu_si128((const __m128i *)&po_sha_k[4 * g]));
                s1[l] = _mm_sha256rnds2_epu32(s1[l], s0[l], msg[l]);
                if (g >= 3 && g <= 14) {
                    tmp = _mm_alignr_epi8(cur, m[l][(g - 1) & 3], 4);
                    m[l][(g + 1) & 3] = _mm_sha256msg2_epu32(_mm_add_epi32(m[l][(g + 1) & 3],
                                                                           tmp), cur);
                }
                msg[l] = _mm_shuffle_epi32(msg[l], 0x0E);
                s0[l] = _mm_sha256rnds2_epu32(s0[l], s1[l], msg[l]);
                if (g >= 1 && g <= 12) m[l][(g - 1) & 3] = _mm_sha256msg1_epu32(m[l][(g - 1) & 3],
                                                                                cur);
            }
        }
#pragma GCC unroll 2
        for (l = 0; l < 2; l++) {
            s0[l] = _mm_add_epi32(s0[l], abef[l]);
            s1[l] = _mm_add_epi32(s1[l], cdgh[l]);
        }
    }
    for (l = 0; l < 2; l++) {
        tmp = _mm_shuffle_epi32(s0[l], 0x1B);
        s1[l] = _mm_shuffle_epi32(s1[l], 0xB1);
        _mm_storeu_si128((__m128i *)&h[l][0], _mm_blend_epi16(tmp, s1[l], 0xF0));
        _mm_storeu_si128((__m128i *)&h[l][4], _mm_alignr_epi8(s1[l], tmp, 8));
    }
}

static int po_has_sha_ni(void) {
    unsigned a, b, c, d;
    if (__get_cpuid_max(0, 0) < 7) return 0;
    __cpuid(1, a, b, c, d);
    if (!((c >> 19) & 1) || !((c >> 9) & 1)) return 0; /* SSE4.1, SSSE3 */
    __cpuid_count(7, 0, a, b, c, d);
    return (b >> 29) & 1;
}
#endif

static void po_sha_blocks(uint32_t h[8], const unsigned char *p, uint64_t blocks) {
#ifdef PO_SHA_NI
    if (po_has_sha_ni()) {
        po_sha_blocks_ni(h, p, blocks);
        return;
    }
#endif
    for (; blocks; blocks--, p += 64) po_sha_block(h, p);
}

static const uint32_t po_sha_h0[8] = {0x6a09e667, 0xbb67ae85, 0x3c6ef372, 0xa54ff53a,
                                      0x510e527f, 0x9b05688c, 0x1f83d9ab, 0x5be0cd19};

/* The padding's blocks and the digest of data[0:size] whose full blocks are in h. */
static void po_sha256_finish(uint32_t h[8], const unsigned char *data, uint64_t size,
                             unsigned char digest[32]) {
    unsigned char tail[128];
    uint64_t full = size / 64 * 64, rest = size - full, bits = size * 8, i;
    size_t n;
    memset(tail, 0, sizeof tail);
    if (rest) memcpy(tail, data + full, (size_t)rest);
    tail[rest] = 0x80;
    n = rest < 56 ? 64 : 128;
    for (i = 0; i < 8; i++) tail[n - 1 - i] = (unsigned char)(bits >> (8 * i));
    po_sha_blocks(h, tail, n / 64);
    for (i = 0; i < 32; i++) digest[i] = (unsigned char)(h[i / 4] >> (24 - 8 * (i % 4)));
}

/* The SHA-256 of data[0:size] into digest (32 bytes). */
static void po_sha256(const unsigned char *data, uint64_t size, unsigned char digest[32]) {
    uint32_t h[8];
    memcpy(h, po_sha_h0, sizeof h);
    po_sha_blocks(h, data, size / 64);
    po_sha256_finish(h, data, size, digest);
}

/* The SHA-256 of two buffers of the same size (digests 0 and 1): both at once with the
   SHA extensions, one after the other without. */
static void po_sha256_pair(const unsigned char *data0, const unsigned char *data1,
                           uint64_t size, unsigned char digest0[32],
                           unsigned char digest1[32]) {
    uint32_t h0[8], h1[8];
    memcpy(h0, po_sha_h0, sizeof h0);
    memcpy(h1, po_sha_h0, sizeof h1);
#ifdef PO_SHA_NI
    if (po_has_sha_ni()) {
        po_sha_blocks_ni_x2(h0, data0, h1, data1, size / 64);
        po_sha256_finish(h0, data0, size, digest0);
        po_sha256_finish(h1, data1, size, digest1);
        return;
    }
#endif
    po_sha256(data0, size, digest0);
    po_sha256(data1, size, digest1);
}

/* The SHA-256 of data[0:size] as 64 lowercase hex digits (and a terminating 0) in hex. */
static void po_sha256_hex(const unsigned char *data, uint64_t size, char hex[65]) {
    unsigned char digest[32];
    int i;
    po_sha256(data, size, digest);
    for (i = 0; i < 32; i++) snprintf(hex + 2 * i, 3, "%02x", digest[i]);
}
