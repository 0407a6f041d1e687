/* mpi_barrier: MPI_Barrier latency for benchmark/compare (the anchors' mpi_bench has no
 * barrier). Built next to the copied anchors with mpicc and run under mpirun with the same
 * transport pinning as run_mpi.sh. Never linked into gloo_lite.
 *
 * Usage: mpirun ... mpi_barrier LABEL barrier SIZES [MIN_TIME_S] [MIN_ITERS] [MAX_ITERS]
 *   (the argument list of mpi_bench; SIZES is ignored, one row with bytes = 0)
 * Timing as in mpi_bench: 20 warm-up barriers, a ~50 ms pilot to pick ITERS on rank 0, then
 * ITERS timed barriers; time = max over ranks of elapsed / ITERS.
 */
#include <math.h>
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int main(int argc, char **argv) {
  MPI_Init(&argc, &argv);
  int rank, P;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &P);
  if (argc < 4 || strcmp(argv[2], "barrier") != 0) {
    if (rank == 0)
      fprintf(stderr, "usage: %s LABEL barrier SIZES [MIN_TIME] [MIN_ITERS] [MAX_ITERS]\n",
              argv[0]);
    MPI_Abort(MPI_COMM_WORLD, 1);
  }
  const char *label = argv[1];
  double minTime = argc > 4 ? atof(argv[4]) : 0.2;
  long long minIters = argc > 5 ? atoll(argv[5]) : 5;
  long long maxIters = argc > 6 ? atoll(argv[6]) : 100000;

  if (rank == 0) {
    printf("# MPI coll=barrier label=%s P=%d min_time=%.3f min_iters=%lld "
           "(benchmark/compare extra)\n", label, P, minTime, minIters);
    printf("lib,algo,coll,P,bytes,count,iters,time_us,algbw_GBps,busbw_GBps,wrong\n");
    fflush(stdout);
  }
  MPI_Barrier(MPI_COMM_WORLD);
  double w0 = MPI_Wtime();
  for (int i = 0; i < 20; i++) MPI_Barrier(MPI_COMM_WORLD);
  double wt = (MPI_Wtime() - w0) / 20;
  long long iters = minIters;
  if (minTime > 0) {
    long long pilot = 0;
    if (rank == 0) {
      pilot = (long long)ceil(0.05 / (wt > 1e-9 ? wt : 1e-9));
      if (pilot > maxIters) pilot = maxIters;
      if (pilot < 1) pilot = 1;
    }
    MPI_Bcast(&pilot, 1, MPI_LONG_LONG, 0, MPI_COMM_WORLD);
    MPI_Barrier(MPI_COMM_WORLD);
    double p0 = MPI_Wtime();
    for (long long i = 0; i < pilot; i++) MPI_Barrier(MPI_COMM_WORLD);
    double pt = (MPI_Wtime() - p0) / pilot;
    if (rank == 0) {
      iters = (long long)ceil(minTime / (pt > 1e-9 ? pt : 1e-9));
      if (iters > maxIters) iters = maxIters;
      if (iters < minIters) iters = minIters;
    }
    MPI_Bcast(&iters, 1, MPI_LONG_LONG, 0, MPI_COMM_WORLD);
  }
  MPI_Barrier(MPI_COMM_WORLD);
  double t0 = MPI_Wtime();
  for (long long i = 0; i < iters; i++) MPI_Barrier(MPI_COMM_WORLD);
  double el = (MPI_Wtime() - t0) / iters, t = 0;
  MPI_Reduce(&el, &t, 1, MPI_DOUBLE, MPI_MAX, 0, MPI_COMM_WORLD);
  if (rank == 0) {
    printf("openmpi,%s,barrier,%d,0,0,%lld,%.2f,0.0000,0.0000,0\n", label, P, iters, t * 1e6);
    fflush(stdout);
  }
  MPI_Finalize();
  return 0;
}
