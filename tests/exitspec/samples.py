"""Real-looking ends of failed tasks' logs, one (or more) per exit-spec log pattern: (pattern name,
exit status, log tail, the code it maps to)."""

CUDA_OOM = """\
Epoch 1:   3%|▎         | 12/391 [00:04<02:13,  2.84it/s, loss=2.31]
Traceback (most recent call last):
  File "/pai/work/code/train.py", line 88, in <module>
    main()
  File "/pai/work/code/train.py", line 71, in main
    loss = criterion(model(images), labels)
  File "/usr/local/lib/python3.10/dist-packages/torch/nn/modules/module.py", line 1511, in _wrapped_call_impl
    return self._call_impl(*args, **kwargs)
torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 1.53 GiB. GPU 0 has a total capacity of 79.15 GiB \
of which 1.12 GiB is free. Process 2371 has 78.02 GiB memory in use. Of the allocated memory 76.40 GiB is allocated \
by PyTorch, and 1.10 GiB is reserved by PyTorch but unallocated. If reserved but unallocated memory is large try \
setting PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True to avoid fragmentation.
"""

MISSING_MODULE = """\
Traceback (most recent call last):
  File "/pai/work/code/train.py", line 3, in <module>
    import timm
ModuleNotFoundError: No module named 'timm'
"""

IMPORT_ERROR = """\
Traceback (most recent call last):
  File "/pai/work/code/train.py", line 5, in <module>
    from torchvision.models import resnet_fpn
ImportError: cannot import name 'resnet_fpn' from 'torchvision.models' \
(/usr/lib/python3/dist-packages/torchvision/models/__init__.py)
"""

NCCL_TIMEOUT = """\
[rank1]:[E ProcessGroupNCCL.cpp:563] [Rank 1] Watchdog caught collective operation timeout: WorkNCCL(SeqNum=1841, \
OpType=ALLREDUCE, NumelIn=26214400, NumelOut=26214400, Timeout(ms)=600000) ran for 600041 milliseconds before \
timing out.
[rank1]:[E ProcessGroupNCCL.cpp:1537] [PG 0 Rank 1] Timeout at NCCL work: 1841, last enqueued NCCL work: 1841.
[rank1]:[E ProcessGroupNCCL.cpp:577] [Rank 1] Some NCCL operations have failed or timed out. Due to the asynchronous \
nature of CUDA kernels, subsequent GPU operations might run on corrupted/incomplete data.
terminate called after throwing an instance of 'c10::DistBackendError'
"""

DATALOADER_SHM = """\
ERROR: Unexpected bus error encountered in worker. This might be caused by insufficient shared memory (shm).
Traceback (most recent call last):
  File "/usr/local/lib/python3.10/dist-packages/torch/utils/data/dataloader.py", line 1133, in _try_get_data
    data = self._data_queue.get(timeout=timeout)
RuntimeError: DataLoader worker (pid 431) is killed by signal: Bus error. It is possible that dataloader's workers \
are out of shared memory. Please try to raise your shared memory limit.
"""

MISSING_DATA = """\
Traceback (most recent call last):
  File "/pai/work/code/train.py", line 40, in <module>
    with open(args.data) as f:
FileNotFoundError: [Errno 2] No such file or directory: '/mnt/data/imagenet/train.csv'
"""

SAMPLES = [
    ("command-not-found", 127, "bash: line 1: tensorflw: command not found\n", 220),
    (
        "jupyter-missing",
        1,
        "PAI: the jupyter runtime plugin needs Jupyter in the job's image, which has none: use "
        "pai-portal/notebook:latest (make image-notebook) or install it (pip install jupyterlab).\n",
        220,
    ),
    (
        "tensorflow-oom",
        1,
        "tensorflow.python.framework.errors_impl.ResourceExhaustedError: OOM when allocating "
        "tensor with shape[256,1024,28,28] and type float on /job:localhost/replica:0/task:0/device:GPU:0\n",
        221,
    ),
    (
        "tensorflow-oom",
        1,
        "W tensorflow/core/common_runtime/bfc_allocator.cc:275] Allocator (GPU_0_bfc) ran out of "
        "memory trying to allocate 2.26GiB.\n",
        221,
    ),
    (
        "mpi-segv",
        1,
        "[node-0:00412] *** Process received signal ***\n[node-0:00412] Signal: Segmentation fault (11)\n"
        "[node-0:00412] Signal code: Address not mapped (1)\n",
        222,
    ),
    (
        "gpu-ecc",
        1,
        "E tensorflow/stream_executor/cuda/cuda_event.cc:29] Error polling for event status: failed to query "
        "event: CUDA_ERROR_ECC_UNCORRECTABLE: uncorrectable ECC error encountered\n",
        223,
    ),
    (
        "cuda-driver-too-old",
        1,
        "RuntimeError: The NVIDIA driver on your system is too old (found version 10010). "
        "Please update your GPU driver\n",
        224,
    ),
    ("cuda-driver-too-old", 1, "CUDA error: CUDA driver version is insufficient for CUDA runtime version\n", 224),
    (
        "cudnn-mismatch",
        1,
        "RuntimeError: cuDNN version incompatibility: PyTorch was compiled  against (8, 9, 2) but "
        "found runtime version (8, 5, 0).\n",
        225,
    ),
    ("cuda-oom", 1, CUDA_OOM, 226),
    (
        "cuda-oom",
        1,
        "THCudaCheck FAIL file=/pytorch/aten/src/THC/generic/THCStorage.cu line=58 error=2 : out of memory\n"
        "RuntimeError: cuda runtime error (2) : out of memory at /pytorch/aten/src/THC/generic/THCStorage.cu:58\n",
        226,
    ),
    (
        "bad-argument",
        2,
        "usage: train.py [-h] [--lr LR] [--batch-size N]\ntrain.py: error: unrecognized arguments: --epoch 10\n",
        228,
    ),
    ("missing-data", 1, MISSING_DATA, 229),
    (
        "data-error",
        1,
        "UnicodeDecodeError: 'utf-8' codec can't decode byte 0x89 in position 0: invalid start byte\n",
        229,
    ),
    ("invalid-save-path", 1, "ValueError: Restore called with invalid save path: '/pai/output/ckpt/model-1000'\n", 230),
    (
        "syntax-error",
        1,
        '  File "/pai/work/code/train.py", line 12\n    print "epoch", epoch\n    ^^^^^^^^^^^^^^^^^^^^\n'
        "SyntaxError: Missing parentheses in call to 'print'. Did you mean print(...)?\n",
        231,
    ),
    ("syntax-error", 1, "NameError: name 'optimiser' is not defined\n", 231),
    ("missing-module", 1, MISSING_MODULE, 232),
    ("import-error", 1, IMPORT_ERROR, 232),
    ("index-out-of-range", 1, "IndexError: list index out of range\n", 233),
    ("segfault", 1, "/pai/work/code/run.sh: line 3:    97 Segmentation fault      ./solver --in data.bin\n", 234),
    ("core-dumped", 1, "run.sh: line 4:    98 Aborted                 (core dumped) ./solver\n", 235),
    ("nccl-timeout", 1, NCCL_TIMEOUT, 134),
    ("nccl-timeout", 134, NCCL_TIMEOUT + "Aborted (core dumped)\n", 134),
    ("dataloader-shm", 1, DATALOADER_SHM, 135),
]
