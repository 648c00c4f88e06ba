/* attrib_torch.c - what torch and the TensorBoard plugin define by name:
 * key_averages(group_by_input_shape=True)'s shape key, and the plugin's
 * tensor-core rules (which kernels use tensor cores, which operators are
 * eligible). Facts only: the lists are written here from their sources'
 * documentation, see each comment. */
#include "analyze/attrib/attrib_priv.h"

/* ---- input shapes as torch groups them -------------------------------------- */

/* torch's FunctionEvent.input_shapes is what key_averages groups by
 * (profiler_util.py: key.append(str(event.input_shapes))), and there a
 * TensorList argument is an empty list: "[]". The trace's "Input Dims" is
 * structured_input_shapes, one shape per tensor of the list
 * ([[[2, 3], [2, 3]], []] for aten::cat). So every top-level element that
 * holds a list (a TensorList, [[]] one of 0-dim tensors included) becomes
 * "[]"; shapes of plain tensors ([2, 3]) and other arguments ([]) stay as
 * written. out has room for n bytes (the result is never longer). */
bool tpa__at_shapes_have_lists(const char *v, size_t n)
{
    int depth = 0;
    for (size_t i = 0; i < n; i++) {
        if (v[i] == '[' && ++depth == 3) return true;
        if (v[i] == ']') depth--;
        if (v[i] == '"') return true;  /* a string: the careful path */
    }
    return false;
}

size_t tpa__at_torch_shapes(const char *v, size_t n, char *out)
{
    size_t o = 0, i = 0;
    int depth = 0;
    bool nested = false;   /* the element open at depth 1 holds a list */
    size_t elem = 0;       /* where that element starts in out */
    for (; i < n; i++) {
        char c = v[i];
        if (c == '"') {    /* a string (never in shapes, but keep its brackets out of the count) */
            size_t j = i + 1;
            while (j < n && v[j] != '"') j += v[j] == '\\' ? 2 : 1;
            if (j >= n) j = n - 1;
            if (depth < 2 || !nested) { memcpy(out + o, v + i, j - i + 1); o += j - i + 1; }
            i = j;
            continue;
        }
        if (c == '[') {
            depth++;
            if (depth == 2) { elem = o; nested = false; }
            else if (depth == 3) nested = true;
        } else if (c == ']') {
            if (depth == 2 && nested) {
                o = elem;
                out[o++] = '[';   /* a TensorList: torch's "[]" */
            }
            if (depth > 0) depth--;
        }
        if (depth >= 2 && nested) continue;
        out[o++] = c;
    }
    return o;
}

/* ---- tensor cores ---------------------------------------------------------- */

/* Kernel names that use tensor cores. Kineto writes no flag for it: the
 * TensorBoard plugin (tb_plugin/torch_tb_profiler/profiler/tensor_core.py,
 * TC_Allowlist, after NVIDIA PyProf's tc.py) reads substrings of the name:
 * cuBLAS/cuDNN MMA shapes (h884, s884, h1688, s1688, c1688, i8816, 16816,
 * hmma), cuDNN's conv kernels (dgrad_1x1_stride_2x2, first_layer_wgrad_kernel,
 * conv1x1, conv2d_c1_k1, direct_group) and xmma_* gemm/conv kernels.
 * Kernels newer than that list are matched too: any xmma, Hopper's gmma
 * (wgmma), wmma, imma, CUTLASS's tensorop and _mma_ names. The plugin's
 * patterns are case-sensitive; these are compared ignoring ASCII case. */
static const char *const tc_kernel_patterns[] = {
    /* the plugin's */
    "h884", "s884", "h1688", "s1688", "hmma", "i8816", "16816", "dgrad_1x1_stride_2x2",
    "first_layer_wgrad_kernel", "conv1x1", "conv2d_c1_k1", "direct_group", "c1688",
    /* xmma covers the plugin's xmma_gemm, xmma_implicit_gemm, xmma_sparse_* ... */
    "xmma",
    /* newer kernels */
    "gmma", "wmma", "imma", "tensorop", "_mma_",
};

bool tpa_kernel_uses_tensor_cores(const char *name, size_t n)
{
    for (size_t k = 0; k < sizeof tc_kernel_patterns / sizeof *tc_kernel_patterns; k++) {
        const char *pat = tc_kernel_patterns[k];
        size_t m = strlen(pat);
        for (size_t i = 0; i + m <= n; i++) {
            size_t q = 0;
            while (q < m && (name[i + q] | 0x20) == pat[q]) q++;
            if (q == m) return true;
        }
    }
    return false;
}

/* Operators eligible for tensor cores: the plugin's TC_OP_Allowlist (the
 * ops autocast runs in lower precision, autocast_mode.cpp, and the backward
 * nodes seen to launch their kernels), compared whole. */
static const char *const tc_ops[] = {
    "aten::_convolution", "aten::conv1d", "aten::conv2d", "aten::conv3d", "aten::conv_tbc",
    "aten::conv_transpose1d", "aten::conv_transpose2d", "aten::conv_transpose3d",
    "aten::convolution", "aten::cudnn_convolution", "aten::cudnn_convolution_transpose",
    "aten::prelu", "aten::addmm", "aten::addmv", "aten::addr", "aten::matmul", "aten::mm",
    "aten::mv", "aten::linear", "aten::addbmm", "aten::baddbmm", "aten::bmm",
    "aten::chain_matmul", "aten::linalg_multi_dot", "aten::_thnn_fused_lstm_cell",
    "aten::_thnn_fused_gru_cell", "aten::lstm_cell", "aten::gru_cell", "aten::rnn_tanh_cell",
    "aten::rnn_relu_cell", "CudnnConvolutionBackward", "BmmBackward0",
    "aten::cudnn_convolution_transpose_backward", "CudnnConvolutionTransposeBackward",
    "MmBackward", "aten::cudnn_convolution_backward_weight", "aten::addmm_", "AddmvBackward",
    "MvBackward", "aten::cudnn_convolution_transpose_backward_weight",
    "aten::cudnn_convolution_transpose_backward_input", "AddmmBackward",
    "aten::cudnn_convolution_backward_input", "AddbmmBackward", "aten::cudnn_convolution_backward",
};

bool tpa_op_tensor_core_eligible(const char *name, size_t n)
{
    for (size_t k = 0; k < sizeof tc_ops / sizeof *tc_ops; k++)
        if (strlen(tc_ops[k]) == n && memcmp(tc_ops[k], name, n) == 0) return true;
    return false;
}

/* The two answers above for string id, found once per string. */
static uint8_t *flags_of(tpa_attrib *at, uint32_t id)
{
    if (id >= at->cname_flags) {
        size_t nc = at->cname_flags ? at->cname_flags : 1024;
        while (nc <= id) nc *= 2;
        uint8_t *p = realloc(at->name_flags, nc);
        if (!p) abort();
        memset(p + at->cname_flags, 0, nc - at->cname_flags);
        at->name_flags = p;
        at->cname_flags = nc;
    }
    uint8_t *f = &at->name_flags[id];
    if (!(*f & NAME_KNOWN)) {
        /* the table itself (not tpa_attrib_str: attrib.c calls here) */
        bool in = id < at->str.cap && at->str.s[id];
        const char *p = in ? at->str.s[id] : "";
        size_t len = in ? at->str.len[id] : 0;
        *f = NAME_KNOWN | (tpa_kernel_uses_tensor_cores(p, len) ? NAME_TC_KERNEL : 0) |
             (tpa_op_tensor_core_eligible(p, len) ? NAME_TC_OP : 0);
    }
    return f;
}

bool tpa__at_name_flag(tpa_attrib *at, uint32_t id, uint8_t flag)
{
    return (*flags_of(at, id) & flag) != 0;
}
