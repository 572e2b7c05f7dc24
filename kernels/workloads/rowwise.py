"""What the row-wise workloads (softmax, rmsnorm, layernorm) share: one row of a float32
matrix at a time, the same shapes, the same OpenMP chunking rule, the same CUDA launch."""
from kernels.spec import Constraint, DesignSpace, Param, Shape, ShapeSets

SHAPES = ShapeSets(
    typical=(Shape.of(rows=4096, cols=4096),),
    awkward=(Shape.of(rows=67, cols=1013), Shape.of(rows=5, cols=4099)),
    minimal=(Shape.of(rows=1, cols=1), Shape.of(rows=1, cols=33)),
    held_out=(Shape.of(rows=4096, cols=2048), Shape.of(rows=333, cols=3001)),
    # The vector fast paths' own shapes (every column count a multiple of 16 and of 64): a
    # path taken only when cols is aligned must be checked too, not only the awkward ones.
    aligned=(Shape.of(rows=33, cols=1024), Shape.of(rows=4, cols=4096), Shape.of(rows=64, cols=64)),
)

CHUNK_FITS = Constraint("CHUNK * THREADS <= max(rows, 1) or CHUNK == 1",
                        "CHUNK x THREADS exceeds the rows: some threads would get no work")

# The normalisations' CUDA seeds (rowwise.cu / warp.cu) share one space.
NORM_CUDA_SPACE = DesignSpace(
    params=(
        Param("ALGO", "variant", choices=("rowwise", "warp"),
              help="rowwise: one block per row (block reduction); warp: one warp per row (shuffles only)"),
        Param("BLOCK", "choice", choices=(128, 256, 512, 1024), default=256, help="threads per block"),
        Param("VEC", "choice", choices=(1, 4),
              help="4: float4 loads/stores when cols % 4 == 0 (scalar otherwise); 1: scalar"),
    ),
)


def ptx_space(reload: bool) -> DesignSpace:
    """The row-wise PTX seeds' knobs (softmax, rmsnorm: ptx_*.ptx). ``reload``: the seed reads
    the row a second time with its own cache operator."""
    params = [
        Param("ALGO", "variant", choices=("warp", "block"),
              help="warp: one warp per row (shuffles); block: one block per row (warps combined in shared memory)"),
        Param("BLOCK", "choice", choices=(128, 256, 512, 1024), default=256, help="threads per block"),
        Param("VEC", "choice", choices=(4, 2, 1),
              help="ld/st.global.v4, .v2 or scalar (vectors when cols % VEC == 0 and the bases are aligned)"),
        Param("UNROLL", "choice", choices=(1, 2, 4), help="vectors each thread loads before using the first"),
        Param("LOAD", "choice", choices=(0, 1, 2, 3),
              help="first read: 0 ld.global, 1 .nc, 2 .cs (streaming), 3 .nc.L1::no_allocate"),
        Param("STORE", "choice", choices=(0, 1, 2), help="0 st.global, 1 .cs (streaming), 2 .L1::no_allocate"),
        Param("REDUCE", "choice", choices=(0, 1),
              help="0: shfl.sync butterflies (then shared memory across warps); 1: a shared-memory butterfly"),
    ]
    params.append(Param("KEEP", "choice", choices=(0, 1),
                        help="block: 1 keeps the row in registers when cols == VEC * UNROLL * BLOCK (read once)"))
    if reload:
        params.insert(5, Param("RELOAD", "choice", choices=(0, 1, 2),
                               help="second read of the row: 0 ld.global, 1 .nc, 2 .lu (last use)"))
    return DesignSpace(params=tuple(params), constraints=(
        Constraint("KEEP == 0 or ALGO == 'block'", "KEEP applies to the block variant (a warp's row is longer "
                   "than one trip)"),))


def cuda_launch(shape: Shape, params) -> tuple:
    """(grid, block, dynamic shared bytes): rowwise has a block per row, warp a warp per row;
    the reductions use static shared memory only."""
    rows, block = shape["rows"], int(params.get("BLOCK", 256))
    if params.get("ALGO", "rowwise") == "warp":
        per_block = block // 32
        return ((rows + per_block - 1) // per_block, 1, 1), (block, 1, 1), 0
    return (rows, 1, 1), (block, 1, 1), 0
