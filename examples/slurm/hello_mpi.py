"""MPI hello: every rank says where it runs and as whom, and leaves a file in $HOME."""

import os
import socket

from mpi4py import MPI

comm = MPI.COMM_WORLD
rank, size = comm.Get_rank(), comm.Get_size()
print("hello from rank %d of %d on %s as uid=%d gid=%d"  # noqa: T201 (the job's output)
      % (rank, size, socket.gethostname(), os.getuid(), os.getgid()), flush=True)
with open(os.path.join(os.environ["HOME"], "hello-mpi-rank%d.txt" % rank), "w") as out:
    out.write("rank %d of %d on %s\n" % (rank, size, socket.gethostname()))
comm.Barrier()
