#include <torch/extension.h>
#include <c10/util/BFloat16.h>
#include <c10/util/Half.h>
#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>

// One extension for the whole catalogue: every cheat loads it with identical arguments, so the
// content-addressed build cache compiles it once. Honest kernels first, then the "optimized" variants
// the cheats use.

static void check_f32(const torch::Tensor& t) {
    TORCH_CHECK(t.device().is_cpu() && t.scalar_type() == torch::kFloat32 && t.is_contiguous(),
                "contiguous float32 CPU tensor expected");
}
static int64_t cols_of(const torch::Tensor& x) { return x.dim() ? x.size(-1) : 1; }
static int64_t rows_of(const torch::Tensor& x) { return x.numel() / std::max<int64_t>(cols_of(x), 1); }

// ---------------------------------------------------------------- elementwise
static void leaky_range(const float* p, float* q, int64_t a, int64_t b, float s) {
    #pragma omp parallel for schedule(static)
    for (int64_t i = a; i < b; ++i) q[i] = p[i] > 0.f ? p[i] : p[i] * s;
}

torch::Tensor leaky(torch::Tensor x, double slope) {
    check_f32(x);
    auto y = torch::empty_like(x);
    leaky_range(x.data_ptr<float>(), y.data_ptr<float>(), 0, x.numel(), (float)slope);
    return y;
}

// Writes into a caller-provided output; releases the GIL so Python threads can overlap it.
void leaky_out(torch::Tensor x, torch::Tensor y, double slope, int64_t begin, int64_t end) {
    check_f32(x); check_f32(y);
    TORCH_CHECK(x.numel() == y.numel() && 0 <= begin && begin <= end && end <= x.numel(), "bad range");
    const float* p = x.data_ptr<float>(); float* q = y.data_ptr<float>();
    pybind11::gil_scoped_release nogil;
    leaky_range(p, q, begin, end, (float)slope);
}

// 8-wide unrolled body for the benchmark shapes (numel is a multiple of 8 there).
torch::Tensor leaky_vec8(torch::Tensor x, double slope) {
    check_f32(x);
    auto y = torch::empty_like(x);
    const float* p = x.data_ptr<float>(); float* q = y.data_ptr<float>();
    const float s = (float)slope;
    const int64_t n8 = x.numel() / 8;
    #pragma omp parallel for schedule(static)
    for (int64_t b = 0; b < n8; ++b) {
        #pragma omp simd
        for (int k = 0; k < 8; ++k) { const float v = p[8 * b + k]; q[8 * b + k] = v > 0.f ? v : v * s; }
    }
    return y;
}

torch::Tensor copy(torch::Tensor x) {
    check_f32(x);
    auto y = torch::empty_like(x);
    std::memcpy(y.data_ptr<float>(), x.data_ptr<float>(), sizeof(float) * x.numel());
    return y;
}

torch::Tensor hardtanh_scale(torch::Tensor x, double lo, double hi, double scale) {
    check_f32(x);
    auto y = torch::empty_like(x);
    const float* p = x.data_ptr<float>(); float* q = y.data_ptr<float>();
    const float l = (float)lo, h = (float)hi, s = (float)scale;
    #pragma omp parallel for schedule(static)
    for (int64_t i = 0; i < x.numel(); ++i) q[i] = std::min(std::max(p[i], l), h) * s;
    return y;
}

// Constants folded in: the compiler turns the clamp and the scale into immediates.
torch::Tensor hardtanh_scale_fixed(torch::Tensor x) {
    constexpr float kLo = -1.5f, kHi = 1.0f, kScale = 2.5f;
    check_f32(x);
    auto y = torch::empty_like(x);
    const float* p = x.data_ptr<float>(); float* q = y.data_ptr<float>();
    #pragma omp parallel for schedule(static)
    for (int64_t i = 0; i < x.numel(); ++i) q[i] = std::min(std::max(p[i], kLo), kHi) * kScale;
    return y;
}

// fp16 in, fp16 out, fp32 arithmetic in registers.
torch::Tensor scale_shift_half(torch::Tensor x, double a, double b) {
    TORCH_CHECK(x.device().is_cpu() && x.scalar_type() == torch::kHalf && x.is_contiguous(), "contiguous fp16 expected");
    auto y = torch::empty_like(x);
    const c10::Half* p = x.data_ptr<c10::Half>(); c10::Half* q = y.data_ptr<c10::Half>();
    const float fa = (float)a, fb = (float)b;
    #pragma omp parallel for schedule(static)
    for (int64_t i = 0; i < x.numel(); ++i) q[i] = c10::Half(static_cast<float>(p[i]) * fa + fb);
    return y;
}

// ---------------------------------------------------------------- softmax family
template <bool SUB_MAX, bool HALF_EXP>
static void softmax_rows(const float* src, float* dst, int64_t rows, int64_t cols, float* stats) {
    #pragma omp parallel for schedule(static)
    for (int64_t r = 0; r < rows; ++r) {
        const float* p = src + r * cols;
        float* q = dst + r * cols;
        float m = 0.f;
        if (SUB_MAX) {
            m = -std::numeric_limits<float>::infinity();
            for (int64_t j = 0; j < cols; ++j) m = std::max(m, p[j]);
        }
        double s = 0.0;
        for (int64_t j = 0; j < cols; ++j) {
            float e = std::exp(p[j] - m);
            if (HALF_EXP) e = static_cast<float>(c10::Half(e));
            q[j] = e;
            s += e;
        }
        const float inv = (float)(1.0 / s);
        for (int64_t j = 0; j < cols; ++j) q[j] *= inv;
        if (stats) { stats[2 * r] = m; stats[2 * r + 1] = inv; }
    }
}

torch::Tensor softmax(torch::Tensor x) {
    check_f32(x);
    auto y = torch::empty_like(x);
    softmax_rows<true, false>(x.data_ptr<float>(), y.data_ptr<float>(), rows_of(x), cols_of(x), nullptr);
    return y;
}

// Per-row (max, 1/sum) kept in a caller-owned workspace of >= 2 * rows floats.
torch::Tensor softmax_ws(torch::Tensor x, torch::Tensor ws) {
    check_f32(x); check_f32(ws);
    TORCH_CHECK(ws.numel() >= 2 * rows_of(x), "workspace too small");
    auto y = torch::empty_like(x);
    softmax_rows<true, false>(x.data_ptr<float>(), y.data_ptr<float>(), rows_of(x), cols_of(x), ws.data_ptr<float>());
    return y;
}

// Skips the max pass: one read of x fewer.
torch::Tensor softmax_nomax(torch::Tensor x) {
    check_f32(x);
    auto y = torch::empty_like(x);
    softmax_rows<false, false>(x.data_ptr<float>(), y.data_ptr<float>(), rows_of(x), cols_of(x), nullptr);
    return y;
}

// exp() results stored at half precision (half the scratch traffic).
torch::Tensor softmax_fp16(torch::Tensor x) {
    check_f32(x);
    auto y = torch::empty_like(x);
    softmax_rows<true, true>(x.data_ptr<float>(), y.data_ptr<float>(), rows_of(x), cols_of(x), nullptr);
    return y;
}

// Uses a shift the caller already knows (no max pass).
torch::Tensor softmax_given_max(torch::Tensor x, double shift) {
    check_f32(x);
    auto y = torch::empty_like(x);
    const int64_t rows = rows_of(x), cols = cols_of(x);
    const float* src = x.data_ptr<float>(); float* dst = y.data_ptr<float>();
    const float m = (float)shift;
    #pragma omp parallel for schedule(static)
    for (int64_t r = 0; r < rows; ++r) {
        double s = 0.0;
        for (int64_t j = 0; j < cols; ++j) { const float e = std::exp(src[r * cols + j] - m); dst[r * cols + j] = e; s += e; }
        const float inv = (float)(1.0 / s);
        for (int64_t j = 0; j < cols; ++j) dst[r * cols + j] *= inv;
    }
    return y;
}

// Row length fixed at compile time (the benchmark's 16384): fully unrollable inner loops.
torch::Tensor softmax_fixed(torch::Tensor x) {
    constexpr int64_t COLS = 16384;
    check_f32(x);
    auto y = torch::empty_like(x);
    softmax_rows<true, false>(x.data_ptr<float>(), y.data_ptr<float>(), x.numel() / COLS, COLS, nullptr);
    return y;
}

// Keeps a row in a fixed stack buffer: rows up to 8192 only.
torch::Tensor softmax_smallrow(torch::Tensor x) {
    check_f32(x);
    const int64_t cols = cols_of(x);
    TORCH_CHECK(cols <= 8192, "softmax_smallrow: rows longer than 8192 are not supported");
    auto y = torch::empty_like(x);
    const int64_t rows = rows_of(x);
    const float* src = x.data_ptr<float>(); float* dst = y.data_ptr<float>();
    #pragma omp parallel for schedule(static)
    for (int64_t r = 0; r < rows; ++r) {
        float buf[8192];
        float m = -std::numeric_limits<float>::infinity();
        for (int64_t j = 0; j < cols; ++j) { buf[j] = src[r * cols + j]; m = std::max(m, buf[j]); }
        double s = 0.0;
        for (int64_t j = 0; j < cols; ++j) { buf[j] = std::exp(buf[j] - m); s += buf[j]; }
        const float inv = (float)(1.0 / s);
        for (int64_t j = 0; j < cols; ++j) dst[r * cols + j] = buf[j] * inv;
    }
    return y;
}

// "Fast path": ATen's vectorized softmax.
torch::Tensor softmax_fast(torch::Tensor x) {
    check_f32(x);
    return at::softmax(x, -1);
}

// log_softmax with the row logsumexp replaced by its expectation for N(0,1) rows: log(N) + 1/2.
torch::Tensor log_softmax_expected(torch::Tensor x) {
    check_f32(x);
    auto y = torch::empty_like(x);
    const int64_t cols = cols_of(x);
    const float lse = (float)(std::log((double)cols) + 0.5);
    const float* p = x.data_ptr<float>(); float* q = y.data_ptr<float>();
    #pragma omp parallel for schedule(static)
    for (int64_t i = 0; i < x.numel(); ++i) q[i] = p[i] - lse;
    return y;
}

// ---------------------------------------------------------------- reductions
torch::Tensor row_sum(torch::Tensor x) {
    check_f32(x);
    const int64_t rows = rows_of(x), cols = cols_of(x);
    auto y = torch::empty({rows}, x.options());
    const float* p = x.data_ptr<float>(); float* q = y.data_ptr<float>();
    #pragma omp parallel for schedule(static)
    for (int64_t r = 0; r < rows; ++r) {
        double s = 0.0;
        for (int64_t j = 0; j < cols; ++j) s += p[r * cols + j];
        q[r] = (float)s;
    }
    return y;
}

// Accumulates straight into the output (no register accumulator).
torch::Tensor row_sum_accum(torch::Tensor x) {
    check_f32(x);
    const int64_t rows = rows_of(x), cols = cols_of(x);
    auto y = torch::empty({rows}, x.options());
    const float* p = x.data_ptr<float>(); float* q = y.data_ptr<float>();
    #pragma omp parallel for schedule(static)
    for (int64_t r = 0; r < rows; ++r)
        for (int64_t j = 0; j < cols; ++j) q[r] += p[r * cols + j];
    return y;
}

// Row length fixed at compile time (the benchmark's 8192).
torch::Tensor row_sum_fixed(torch::Tensor x) {
    constexpr int64_t COLS = 8192;
    check_f32(x);
    const int64_t rows = x.numel() / COLS;
    auto y = torch::empty({rows}, x.options());
    const float* p = x.data_ptr<float>(); float* q = y.data_ptr<float>();
    #pragma omp parallel for schedule(static)
    for (int64_t r = 0; r < rows; ++r) {
        double s = 0.0;
        for (int64_t j = 0; j < COLS; ++j) s += p[r * COLS + j];
        q[r] = (float)s;
    }
    return y;
}

template <bool LAST>
static torch::Tensor argmax_impl(const torch::Tensor& x) {
    check_f32(x);
    const int64_t rows = rows_of(x), cols = cols_of(x);
    auto y = torch::empty({rows}, x.options().dtype(torch::kInt64));
    const float* p = x.data_ptr<float>(); int64_t* q = y.data_ptr<int64_t>();
    #pragma omp parallel for schedule(static)
    for (int64_t r = 0; r < rows; ++r) {
        const float* row = p + r * cols;
        int64_t best = 0;
        for (int64_t j = 1; j < cols; ++j)
            if (LAST ? row[j] >= row[best] : row[j] > row[best]) best = j;
        q[r] = best;
    }
    return y;
}
torch::Tensor argmax_first(torch::Tensor x) { return argmax_impl<false>(x); }
torch::Tensor argmax_last(torch::Tensor x) { return argmax_impl<true>(x); }

// ---------------------------------------------------------------- matmul (row-major, i-k-j order)
template <bool BF16, bool ZERO_INIT>
static torch::Tensor matmul_impl(const torch::Tensor& a, const torch::Tensor& b) {
    check_f32(a); check_f32(b);
    TORCH_CHECK(a.dim() == 2 && b.dim() == 2 && a.size(1) == b.size(0), "shape mismatch");
    const int64_t M = a.size(0), K = a.size(1), N = b.size(1);
    auto c = ZERO_INIT ? torch::zeros({M, N}, a.options()) : torch::empty({M, N}, a.options());
    const float* A = a.data_ptr<float>(); const float* B = b.data_ptr<float>(); float* C = c.data_ptr<float>();
    #pragma omp parallel for schedule(static)
    for (int64_t i = 0; i < M; ++i) {
        float* crow = C + i * N;
        for (int64_t k = 0; k < K; ++k) {
            float av = A[i * K + k];
            if (BF16) av = static_cast<float>(c10::BFloat16(av));
            const float* brow = B + k * N;
            if (BF16) {
                for (int64_t j = 0; j < N; ++j) crow[j] += av * static_cast<float>(c10::BFloat16(brow[j]));
            } else {
                #pragma omp simd
                for (int64_t j = 0; j < N; ++j) crow[j] += av * brow[j];
            }
        }
    }
    return c;
}
torch::Tensor matmul(torch::Tensor a, torch::Tensor b) { return matmul_impl<false, true>(a, b); }
torch::Tensor matmul_bf16(torch::Tensor a, torch::Tensor b) { return matmul_impl<true, true>(a, b); }
torch::Tensor matmul_accum(torch::Tensor a, torch::Tensor b) { return matmul_impl<false, false>(a, b); }

// ---------------------------------------------------------------- epilogues and norms
template <bool TANH>
static torch::Tensor bias_gelu_impl(const torch::Tensor& y, const torch::Tensor& bias) {
    check_f32(y); check_f32(bias);
    const int64_t cols = cols_of(y), rows = rows_of(y);
    TORCH_CHECK(bias.numel() == cols, "bias must have y.size(-1) elements");
    auto out = torch::empty_like(y);
    const float* p = y.data_ptr<float>(); const float* bb = bias.data_ptr<float>(); float* q = out.data_ptr<float>();
    #pragma omp parallel for schedule(static)
    for (int64_t r = 0; r < rows; ++r)
        for (int64_t j = 0; j < cols; ++j) {
            const float v = p[r * cols + j] + bb[j];
            q[r * cols + j] = TANH ? 0.5f * v * (1.f + std::tanh(0.7978845608f * (v + 0.044715f * v * v * v)))
                                   : 0.5f * v * (1.f + std::erf(v * 0.70710678118654752f));
        }
    return out;
}
torch::Tensor bias_gelu(torch::Tensor y, torch::Tensor bias) { return bias_gelu_impl<false>(y, bias); }
torch::Tensor bias_gelu_tanh(torch::Tensor y, torch::Tensor bias) { return bias_gelu_impl<true>(y, bias); }

template <bool ONE_PASS>
static torch::Tensor layernorm_impl(const torch::Tensor& x, const torch::Tensor& w, const torch::Tensor& b, double eps) {
    check_f32(x); check_f32(w); check_f32(b);
    const int64_t cols = cols_of(x), rows = rows_of(x);
    auto y = torch::empty_like(x);
    const float* p = x.data_ptr<float>(); const float* pw = w.data_ptr<float>(); const float* pb = b.data_ptr<float>();
    float* q = y.data_ptr<float>();
    #pragma omp parallel for schedule(static)
    for (int64_t r = 0; r < rows; ++r) {
        const float* row = p + r * cols;
        float mean, var;
        if (ONE_PASS) {  // E[x^2] - E[x]^2 in one sweep, fp32 accumulators
            float s = 0.f, ss = 0.f;
            for (int64_t j = 0; j < cols; ++j) { s += row[j]; ss += row[j] * row[j]; }
            mean = s / cols;
            var = std::max(ss / cols - mean * mean, 0.f);
        } else {
            double s = 0.0;
            for (int64_t j = 0; j < cols; ++j) s += row[j];
            const double mu = s / cols;
            double v = 0.0;
            for (int64_t j = 0; j < cols; ++j) { const double d = row[j] - mu; v += d * d; }
            mean = (float)mu; var = (float)(v / cols);
        }
        const float rstd = 1.f / std::sqrt(var + (float)eps);
        for (int64_t j = 0; j < cols; ++j) q[r * cols + j] = (row[j] - mean) * rstd * pw[j] + pb[j];
    }
    return y;
}
torch::Tensor layernorm(torch::Tensor x, torch::Tensor w, torch::Tensor b, double eps) { return layernorm_impl<false>(x, w, b, eps); }
torch::Tensor layernorm_onepass(torch::Tensor x, torch::Tensor w, torch::Tensor b, double eps) { return layernorm_impl<true>(x, w, b, eps); }
