/* The per-board kernel of electric_math.kernel.board_pass in C, for the numba/numpy/C
 * comparison in bench/bench_casino.py (compiled there with gcc -O3 and called via ctypes).
 * Same algorithm: rank the 1,081 hands, sort, sweep with per-card counts. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

static int cmp64(const void *a, const void *b) {
    int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
    return (x > y) - (x < y);
}

void board_pass(const int64_t *board, const int32_t *nf, const int32_t *ft,
                const int64_t *off /* 13*8*5 */, const int64_t *c1, const int64_t *c2,
                int32_t *rank_out, int64_t *win, int64_t *tie) {
    int used[52] = {0};
    int64_t cnt[13] = {0}, sc[4] = {0}, sm[4] = {0};
    int32_t rp[13][13];
    int64_t keys[1326];
    for (int i = 0; i < 5; i++) {
        int64_t c = board[i];
        used[c] = 1; cnt[c >> 2]++; sc[c & 3]++; sm[c & 3] |= 1LL << (c >> 2);
    }
    int fs = -1;
    for (int s = 0; s < 4; s++) if (sc[s] >= 3) fs = s;
    for (int r1 = 0; r1 < 13; r1++)
        for (int r2 = r1; r2 < 13; r2++) {
            cnt[r1]++; cnt[r2]++;
            if (cnt[r1] <= 4 && cnt[r2] <= 4) {
                int64_t k = 7, idx = 0;
                for (int i = 0; i < 13; i++) { idx += off[(i * 8 + k) * 5 + cnt[i]]; k -= cnt[i]; }
                rp[r1][r2] = rp[r2][r1] = nf[idx];
            }
            cnt[r1]--; cnt[r2]--;
        }
    int n = 0;
    for (int h = 0; h < 1326; h++) {
        int64_t a = c1[h], b = c2[h];
        if (used[a] || used[b]) { rank_out[h] = 0; continue; }
        int32_t r = rp[a >> 2][b >> 2];
        if (fs >= 0) {
            int64_t m = sm[fs], k = sc[fs];
            if ((a & 3) == fs) { m |= 1LL << (a >> 2); k++; }
            if ((b & 3) == fs) { m |= 1LL << (b >> 2); k++; }
            if (k >= 5 && ft[m] > r) r = ft[m];
        }
        rank_out[h] = r;
        keys[n++] = (int64_t)r * 2048 + h;
    }
    qsort(keys, n, sizeof(int64_t), cmp64);
    int64_t less[52] = {0}, eq[52] = {0}, less_total = 0;
    int j = 0;
    while (j < n) {
        int64_t r = keys[j] >> 11;
        int g = j;
        while (g < n && (keys[g] >> 11) == r) {
            int64_t h = keys[g] & 2047; eq[c1[h]]++; eq[c2[h]]++; g++;
        }
        int64_t size = g - j;
        for (int q = j; q < g; q++) {
            int64_t h = keys[q] & 2047, a = c1[h], b = c2[h];
            win[h] = less_total - less[a] - less[b];
            tie[h] = size - eq[a] - eq[b] + 1;
        }
        for (int q = j; q < g; q++) {
            int64_t h = keys[q] & 2047;
            less[c1[h]] += eq[c1[h]]; less[c2[h]] += eq[c2[h]];
            eq[c1[h]] = 0; eq[c2[h]] = 0;
        }
        less_total += size;
        j = g;
    }
}

void many(const int8_t *boards, int64_t n, const int32_t *nf, const int32_t *ft,
          const int64_t *off, const int64_t *c1, const int64_t *c2, int64_t *checksum) {
    int32_t rank_out[1326];
    int64_t win[1326], tie[1326], b[5];
    int64_t s = 0;
    for (int64_t i = 0; i < n; i++) {
        for (int k = 0; k < 5; k++) b[k] = boards[i * 5 + k];
        board_pass(b, nf, ft, off, c1, c2, rank_out, win, tie);
        s += win[1325] + tie[0];
    }
    *checksum = s;
}
