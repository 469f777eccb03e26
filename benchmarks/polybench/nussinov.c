/* nussinov: RNA folding, maximal number of matched base pairs (dynamic programming) */
#ifndef N
# define N 2500
#endif
#define pair_score(a, b) ((a) + (b) == 3 ? 1 : 0)
#define best(a, b) ((a) >= (b) ? (a) : (b))
void kernel_nussinov(int n, int seq[N], int table[N][N])
{
  int i, j, k;
#pragma scop
  for (i = n - 1; i >= 0; i--)
    for (j = i + 1; j < n; j++) {
      if (j - 1 >= 0)
        table[i][j] = best(table[i][j], table[i][j - 1]);
      if (i + 1 < n)
        table[i][j] = best(table[i][j], table[i + 1][j]);
      if (j - 1 >= 0 && i + 1 < n) {
        if (i < j - 1)
          table[i][j] = best(table[i][j], table[i + 1][j - 1] + pair_score(seq[i], seq[j]));
        else
          table[i][j] = best(table[i][j], table[i + 1][j - 1]);
      }
      for (k = i + 1; k < j; k++)
        table[i][j] = best(table[i][j], table[i][k] + table[k + 1][j]);
    }
#pragma endscop
}
