# -*- Python -*-
# lit configuration for mpc. Works in two ways:
#  * from the build tree (ctest, or lit.py build/test/lit): lit.site.cfg.py
#    sets the tool folders of that build;
#  * from the source tree (lit.py test/lit) with `mpc` and FileCheck,
#    split-file and not on PATH.
import os
import shutil
import subprocess
import tempfile

import lit.formats

config.name = "mpc"
config.test_format = lit.formats.ShTest(execute_external=False)
config.suffixes = [".test"]
config.excludes = ["Inputs"]
config.test_source_root = os.path.dirname(os.path.abspath(__file__))

obj_root = getattr(config, "mpc_obj_root", None)
if obj_root:
    config.test_exec_root = os.path.join(obj_root, "test", "lit")
else:
    config.test_exec_root = os.path.join(tempfile.gettempdir(), "mpc-lit")

paths = []
for attr in ("mpc_tools_dir",):
    d = getattr(config, attr, None)
    if d:
        paths.append(d)
paths += list(getattr(config, "mpc_extra_bin_dirs", []))
paths.append(getattr(config, "llvm_tools_dir", "/usr/lib/llvm-14/bin"))
config.environment["PATH"] = os.pathsep.join(paths + [os.environ.get("PATH", "")])
config.environment["LC_ALL"] = "C"
config.environment["FILECHECK_OPTS"] = "-enable-var-scope --allow-unused-prefixes=false"
for var in ("TERM", "COLUMNS", "CLICOLOR_FORCE"):
    config.environment.pop(var, None)

src_root = getattr(config, "mpc_src_root",
                   os.path.dirname(os.path.dirname(config.test_source_root)))
config.substitutions.append(("%inputs", os.path.join(config.test_source_root, "Inputs")))
config.substitutions.append(("%examples", os.path.join(src_root, "examples")))
# The allocator this build linked into mpc (MPC_ALLOCATOR), as --version names it.
config.substitutions.append(("%allocator", getattr(config, "mpc_allocator", "system malloc")))
# %numpy-python: the interpreter with Debian's python3-numpy (the build's
# choice; python3 on PATH outside a build).
config.substitutions.append(("%numpy-python", getattr(config, "mpc_numpy_python", "python3")))
# %expect-exit N cmd...: cmd must exit with status N exactly.
config.substitutions.append(("%expect-exit",
                             "bash " + os.path.join(src_root, "test", "utils", "expect-exit.sh")))
# %read-only DIR cmd...: cmd runs while no one may write in DIR, root included.
config.substitutions.append(("%read-only",
                             "bash " + os.path.join(src_root, "test", "utils", "read-only.sh")))

missing = [t for t in ("mpc", "FileCheck", "split-file", "not")
           if shutil.which(t, path=config.environment["PATH"]) is None]
if missing:
    lit_config.fatal("cannot find %s on PATH; build mpc and put it and the LLVM tools "
                     "(/usr/lib/llvm-14/bin) on PATH" % ", ".join(missing))

# The 'cuda' feature: built with CUDA and a GPU is visible.
def gpu_visible():
    smi = shutil.which("nvidia-smi")
    if not smi:
        return False
    try:
        out = subprocess.run([smi, "-L"], capture_output=True, text=True, timeout=20)
    except Exception:
        return False
    return out.returncode == 0 and "GPU" in out.stdout

# 'cuda-build': mpc has the CUDA runtime, whether or not a GPU is visible.
if getattr(config, "mpc_have_cuda", False):
    config.available_features.add("cuda-build")
    if gpu_visible():
        config.available_features.add("cuda")

# 'mpi': OpenMPI's mpirun is installed (scripts/install-deps.sh puts it there;
# under CI it must be). %mpirun starts a job of N ranks on this host:
# `%mpirun N mpc run ...`, oversubscribed (more ranks than cores is fine),
# allowed as root, and killed after 120 s so a hang fails instead of waiting.
mpirun = shutil.which("mpirun")
if mpirun:
    config.available_features.add("mpi")
elif os.environ.get("CI"):
    lit_config.fatal("CI is set but mpirun is missing: run scripts/install-deps.sh")
config.environment["OMPI_ALLOW_RUN_AS_ROOT"] = "1"
config.environment["OMPI_ALLOW_RUN_AS_ROOT_CONFIRM"] = "1"
# Aggregated help messages would hide which rank said what.
config.environment["OMPI_MCA_orte_base_help_aggregate"] = "0"
config.substitutions.append(("%mpirun", "timeout -k 5 120 %s --oversubscribe -np" % mpirun
                             if mpirun else "false"))
