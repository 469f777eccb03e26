/* 2mm: D := alpha*A*B*C + beta*D, through tmp = alpha*A*B */
#ifndef NI
# define NI 800
# define NJ 900
# define NK 1100
# define NL 1200
#endif
void kernel_2mm(int ni, int nj, int nk, int nl, double alpha, double beta,
                double tmp[NI][NJ], double A[NI][NK], double B[NK][NJ],
                double C[NJ][NL], double D[NI][NL])
{
  int i, j, k;
#pragma scop
  for (i = 0; i < ni; i++)
    for (j = 0; j < nj; j++) {
      tmp[i][j] = 0.0;
      for (k = 0; k < nk; ++k)
        tmp[i][j] += alpha * A[i][k] * B[k][j];
    }
  for (i = 0; i < ni; i++)
    for (j = 0; j < nl; j++) {
      D[i][j] *= beta;
      for (k = 0; k < nj; ++k)
        D[i][j] += tmp[i][k] * C[k][j];
    }
#pragma endscop
}
