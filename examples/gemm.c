/* gemm: C := alpha*A*B + beta*C, in the style of PolyBench/C 4.2.1.
   polyopt reads the region between the pragmas: po.from_c("examples/gemm.c"),
   or `polyopt opt examples/gemm.c`. */
#ifndef NI
# define NI 200
# define NJ 220
# define NK 240
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
