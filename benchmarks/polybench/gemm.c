/* gemm: C := alpha*A*B + beta*C  (PolyBench/C 4.2.1 algorithm, written for polyopt) */
#ifndef NI
# define NI 1000
# define NJ 1100
# define NK 1200
#endif
void kernel_gemm(int ni, int nj, int nk, double alpha, double beta,
                 double C[NI][NJ], double A[NI][NK], double B[NK][NJ])
{
  int i, j, k;
#pragma scop
  for (i = 0; i < ni; i++) {
    for (j = 0; j < nj; j++)
      C[i][j] *= beta;
    for (k = 0; k < nk; k++)
      for (j = 0; j < nj; j++)
        C[i][j] += alpha * A[i][k] * B[k][j];
  }
#pragma endscop
}
