/* What an MPI launcher's environment says about this process, before MPI
 * starts (it is read by the communication layer, engine/comm.h, and by the
 * logger, which keeps info and debug lines to rank 0): whether mpirun (or
 * MPICH's, or a PMIx launcher) started it, as which rank, of how many. */
#ifndef REMAT_LAUNCHER_H
#define REMAT_LAUNCHER_H

/* Nonzero when the environment is an MPI launcher's (Open MPI's
 * OMPI_COMM_WORLD_SIZE, MPICH's PMI_SIZE, PMIx's PMIX_SIZE or PMIX_RANK);
 * *size (may be NULL) is the job's size where the launcher says it, else 0. */
int rm_launched(int *size);
/* This process's rank (OMPI_COMM_WORLD_RANK, PMI_RANK, PMIX_RANK); 0 when
 * not launched or not said. */
int rm_launched_rank(void);
/* This process's rank among the job's processes on this machine (Open MPI's
 * OMPI_COMM_WORLD_LOCAL_RANK, MPICH's MPI_LOCALRANKID, Slurm's
 * SLURM_LOCALID): which GPU it takes. 0 when not said. */
int rm_launched_local_rank(void);

#endif
