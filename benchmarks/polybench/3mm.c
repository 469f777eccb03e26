/* 3mm: G := (A*B)*(C*D) */
#ifndef NI
# define NI 800
# define NJ 900
# define NK 1000
# define NL 1100
# define NM 1200
#endif
void kernel_3mm(int ni, int nj, int nk, int nl, int nm,
                double E[NI][NJ], double A[NI][NK], double B[NK][NJ],
                double F[NJ][NL], double C[NJ][NM], double D[NM][NL], double G[NI][NL])
{
  int i, j, k;
#pragma scop
  for (i = 0; i < ni; i++)
    for (j = 0; j < nj; j++) {
      E[i][j] = 0.0;
      for (k = 0; k < nk; ++k)
        E[i][j] += A[i][k] * B[k][j];
    }
  for (i = 0; i < nj; i++)
    for (j = 0; j < nl; j++) {
      F[i][j] = 0.0;
      for (k = 0; k < nm; ++k)
        F[i][j] += C[i][k] * D[k][j];
    }
  for (i = 0; i < ni; i++)
    for (j = 0; j < nl; j++) {
      G[i][j] = 0.0;
      for (k = 0; k < nj; ++k)
        G[i][j] += E[i][k] * F[k][j];
    }
#pragma endscop
}
