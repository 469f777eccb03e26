/* doitgen: multiresolution analysis kernel, A[r][q][:] := A[r][q][:] C4 */
#ifndef NQ
# define NQ 140
# define NR 150
# define NP 160
#endif
void kernel_doitgen(int nr, int nq, int np, double A[NR][NQ][NP], double C4[NP][NP],
                    double sum[NP])
{
  int r, q, p, s;
#pragma scop
  for (r = 0; r < nr; r++)
    for (q = 0; q < nq; q++) {
      for (p = 0; p < np; p++) {
        sum[p] = 0.0;
        for (s = 0; s < np; s++)
          sum[p] += A[r][q][s] * C4[s][p];
      }
      for (p = 0; p < np; p++)
        A[r][q][p] = sum[p];
    }
#pragma endscop
}
