# Source after .device-deps*/setup-env.sh on the GPU machine, when Open MPI
# comes from the carried Debian packages (benchmarks/fetch_mpi_deps.sh).
# Debian's Open MPI is configured with prefix /usr, so relocating it means
# OPAL_PREFIX=<unpack root>/usr; setup-env.sh points it at .../openmpi,
# which makes mpirun load the component plugins of whatever Open MPI the
# machine itself has under /usr (a different build: "undefined symbol
# PMIx_Info_create"). This also pins CMake and mpirun to the carried copy.
_spt_mpi_root=/opt/spt-deps/usr
if [ -x "$_spt_mpi_root/bin/orterun" ]; then
  export OPAL_PREFIX="$_spt_mpi_root"
  export PMIX_MCA_mca_base_component_path="$_spt_mpi_root/lib/x86_64-linux-gnu/pmix2/lib/pmix"
  export LD_LIBRARY_PATH="$_spt_mpi_root/lib/x86_64-linux-gnu/openmpi/lib:$_spt_mpi_root/lib/x86_64-linux-gnu/pmix2/lib:$LD_LIBRARY_PATH"
  export MPIRUN="$_spt_mpi_root/bin/orterun"
  export MPI_CMAKE_ARGS="-DMPI_C_COMPILER=$_spt_mpi_root/bin/mpicc.openmpi -DMPI_CXX_COMPILER=$_spt_mpi_root/bin/mpicxx.openmpi"
  echo "Open MPI from $_spt_mpi_root: $("$_spt_mpi_root/bin/ompi_info" --path pkglibdir 2>&1 | sed 's/^ *//')"
fi
