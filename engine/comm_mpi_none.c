/* The mpi communication backend in a build without MPI (comm.h): absent. */
#include "comm.h"

int rm_comm_have_mpi(void)
{
    return 0;
}

int rm_comm_mpi_create(rm_comm **out, rm_err *e)
{
    *out = NULL;
    return rm_errorf(e, RM_ERR_UNSUPPORTED, "this remat was built without MPI (-DREMAT_MPI=OFF, or no MPI found)");
}
