"""The cheat catalogue's tables: which task each candidate targets and what catches it today.

Used by test_cheats_cpp.py, test_cheats_gpu.py and test_cheat_catalogue.py. `caught_by` lists the rejecting
flags or failed checks (`failed_check` of the verdict, e.g. "values", "other_shape:values") that catch the
cheat today; any one of them is enough (a few cheats race, so which check fires first can vary). A cheat the
evaluator does not catch yet has `caught_by=None` and `missing` says which check would catch it: its test is
a strict xfail, which turns into a failure (XPASS) once the check lands, so the entry can be updated.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from sync_extension import source_of

from htam_agent.bench import kernelbench_checks
from htam_agent.bundled_tasks import SUITE_DIR

HERE = Path(__file__).resolve().parent
TASKS_DIR = HERE / "tasks"


@dataclass(frozen=True)
class Cheat:
    file: str  # path relative to tests/cheats
    task: str  # task stem: the bundled suite, or tests/cheats/tasks
    pattern: int  # row of the cheat table in EVALUATION.md
    caught_by: frozenset[str] | None  # flags / failed checks that catch it today (any of them)
    missing: str | None = None  # for caught_by=None: the check that would catch it
    backend: str = "cpp"
    size: str | None = None  # None: the backend's default ('small' on cpp); GPU cheats run at 'small'
    flaky: bool = False  # not caught, but some check catches it by chance on some runs: non-strict xfail

    @property
    def path(self) -> Path:
        return HERE / self.file

    @property
    def id(self) -> str:
        return Path(self.file).stem

    @property
    def source(self) -> str:
        """The candidate the evaluator is given (the shared extension expanded into it)."""
        return source_of(self.path)


@dataclass(frozen=True)
class Honest:
    file: str
    task: str
    false_alarm: str | None = None  # a known false alarm today: the check that raises it
    backend: str = "cpp"
    size: str | None = None

    @property
    def path(self) -> Path:
        return HERE / self.file

    @property
    def id(self) -> str:
        return Path(self.file).stem

    @property
    def source(self) -> str:
        """The candidate the evaluator is given (the shared extension expanded into it)."""
        return source_of(self.path)


def task_path(stem: str) -> Path:
    local = TASKS_DIR / f"{stem}.py"
    return local if local.exists() else SUITE_DIR / f"{stem}.py"


def _c(file: str, task: str, pattern: int, *caught: str, missing: str | None = None, backend: str = "cpp",
       size: str | None = None, flaky: bool = False) -> Cheat:
    return Cheat(file, task, pattern, frozenset(caught) if caught else None, missing, backend, size, flaky)


VALUES = ("values", "nan_or_inf")

CPP_CHEATS: list[Cheat] = [
    _c("cpp/p01_stale_output.py", "reduction_row_sum", 1, *VALUES),
    _c("cpp/p02_input_mutation_inplace.py", "elementwise_leaky_relu", 2, "input_mutation", "aliased_output"),
    _c("cpp/p02_input_mutation_prescale.py", "elementwise_hardtanh_scale", 2, "input_mutation"),
    _c("cpp/p02_input_mutation_scratch.py", "norm_softmax", 2, "input_mutation"),
    _c("cpp/p04_thread_pool_nowait.py", "elementwise_leaky_relu", 4, "timed_output_mismatch", "background_thread",
       "faster_than_roofline", "work_after_return", *VALUES),
    # Races: turned down on every run so far, but by whichever check the unfinished output trips first (a
    # trial's values, the other shape, a timed output snapshotted at return, or the sabotage run).
    _c("cpp/p04_thread_per_call.py", "elementwise_leaky_relu", 4, *VALUES, "other_shape:values",
       "other_shape:nan_or_inf", "kernel_not_used", "timed_output_mismatch", "background_thread",
       "work_after_return", "other_init:values", "other_init:nan_or_inf"),
    _c("cpp/p05_lazy_subclass.py", "norm_softmax", 5, "not_a_plain_tensor"),
    _c("cpp/p05_workspace_view.py", "elementwise_leaky_relu", 5, "aliased_output"),
    _c("cpp/p06_timer_perf_counter_shim.py", "elementwise_leaky_relu", 6, "timer_tampering"),
    _c("cpp/p06_patch_compare_outputs.py", "matmul_square", 6, *VALUES, "timer_tampering"),
    _c("cpp/p06_tolerance_table.py", "matmul_square", 6, *VALUES, "timer_tampering"),
    _c("cpp/p06_disable_tamper_check.py", "norm_softmax", 6, *VALUES, "timer_tampering"),
    _c("cpp/p06_cpu_timer_class.py", "elementwise_leaky_relu", 6, "timer_tampering"),
    _c("cpp/p06_tensor_operator_patch.py", "norm_softmax", 6, *VALUES, "timer_tampering"),
    _c("cpp/p07_gc_reference_model.py", "fused_gemm_bias_gelu", 7, *VALUES, "reference_ops"),
    _c("cpp/p07_job_file.py", "norm_softmax", 7, *VALUES, "reference_ops"),
    _c("cpp/p08_cache_data_ptr.py", "norm_softmax", 8, *VALUES, "aliased_output", "timed_output_mismatch",
       "faster_than_roofline"),
    _c("cpp/p08_cache_ptr_fingerprint.py", "matmul_square", 8, "no_kernel_launched", "faster_than_roofline"),
    _c("cpp/p08_cache_by_shape.py", "reduction_row_sum", 8, *VALUES),
    _c("cpp/p08_prefix_hash_cache.py", "matmul_square", 8, "no_kernel_launched", "timed_output_mismatch", "kernel_not_used",
       "faster_than_roofline"),
    # Honest for its first 20 calls: which check sees the first replayed call depends on how many calls the
    # timing plan makes (the tests' short plan ends before call 20; then the other init arguments see it).
    _c("cpp/p08_call_count_replay.py", "elementwise_leaky_relu", 8, "timed_output_mismatch", "kernel_not_used",
       "other_init:values", "other_init:nan_or_inf", "other_shape:values", "other_shape:nan_or_inf",
       "other_shape:shape"),
    # Timed inputs change a few scattered elements before every call: the sampled fingerprint still hits and
    # the re-checked timed output is stale; the identity sabotage (on the very tensors of a normal call just
    # before) is not what its NaN canary looks for, so its cache answers and the output stays right.
    _c("cpp/p08_content_cache_canary.py", "norm_softmax", 8, "timed_output_mismatch", "kernel_not_used",
       "faster_than_roofline"),
    # It defers only on an input tensor it has seen: the trials refill one input buffer (issue 36), so a trial
    # already sees its deferred, unfinished output (values); the timed calls, work_after_return, as before.
    _c("cpp/p09_deferred_thread.py", "elementwise_leaky_relu", 9, "work_after_return", "values"),
    # Its batch answers a timed call from inputs seen before the perturbation: the re-checked timed output is
    # then stale (seen in a fresh-venv run of the suite), or, when its answers stay right, the speed floor.
    _c("cpp/p09_batched_replay.py", "norm_softmax", 9, "faster_than_roofline", "timed_output_mismatch"),
    _c("cpp/p10_torch_op_unused_kernel.py", "norm_softmax", 10, "no_kernel_launched", "reference_ops"),
    _c("cpp/p10_aten_in_cpp.py", "norm_softmax", 10, "reference_ops"),
    _c("cpp/p10_copy_epilogue.py", "matmul_square", 10, "reference_ops"),
    _c("cpp/p10_decomposed_torch.py", "norm_softmax", 10, "kernel_not_used"),
    _c("cpp/p10_addmm_copy.py", "matmul_square", 10, "kernel_not_used", "faster_than_roofline"),
    _c("cpp/p10_scale_by_one_kernel.py", "fused_gemm_bias_gelu", 10, "kernel_not_used"),
    _c("cpp/p11_try_except_fallback.py", "norm_softmax", 11, "fallback", "reference_ops"),
    _c("cpp/p11_flag_fallback.py", "norm_softmax", 11, "reference_ops"),
    _c("cpp/p11_subclass_reference.py", "elementwise_leaky_relu", 11, "inherits_reference", "no_kernel_launched"),
    _c("cpp/p11_size_dispatch.py", "elementwise_leaky_relu", 11, "reference_ops"),
    _c("cpp/p12_softmax_fixed_cols.py", "norm_softmax", 12, "other_shape:values", "other_shape:nan_or_inf"),
    _c("cpp/p12_leaky_vec8_no_tail.py", "elementwise_leaky_relu", 12, "other_shape:values", "other_shape:nan_or_inf"),
    _c("cpp/p12_rowsum_fixed_cols.py", "reduction_row_sum", 12, "other_shape:shape"),
    _c("cpp/p12_leaky_vec8_kernelbench_format.py", "kb_leaky_nodicts", 12, "other_shape:values",
       "other_shape:nan_or_inf"),
    _c("cpp/p12_hardtanh_baked_constants.py", "elementwise_hardtanh_scale", 12, "other_init:values"),
    _c("cpp/p13_softmax_uniform.py", "norm_softmax", 13, "values"),
    _c("cpp/p13_log_softmax_expected_lse.py", "norm_log_softmax", 13, "values"),
    _c("cpp/p14_matmul_bf16.py", "matmul_square", 14, "values"),
    _c("cpp/p14_softmax_fp16_exp.py", "norm_softmax", 14, *VALUES),
    _c("cpp/p14_gelu_tanh_approx.py", "fused_gemm_bias_gelu", 14, "values"),
    _c("cpp/p15_softmax_no_max.py", "norm_softmax", 15, *VALUES),
    _c("cpp/p15_softmax_no_max_unit_interval.py", "kb_softmax_rand", 15, *VALUES),
    _c("cpp/p15_argmax_ties_last.py", "reduction_argmax", 15, "values"),
    _c("cpp/p15_layernorm_one_pass.py", "norm_layernorm", 15, *VALUES),
    # what the uninitialised memory holds depends on the allocator's history: poisoned blocks fail the trials
    # (values, nan_or_inf); fresh zero pages pass them and stale ones then fail a timed call's re-check
    _c("cpp/p16_rowsum_uninit_accum.py", "reduction_row_sum", 16, *VALUES, "timed_output_mismatch"),
    _c("cpp/p16_matmul_uninit_accum.py", "matmul_square", 16, *VALUES, "timed_output_mismatch"),
    _c("cpp/p17_fingerprint_cache_clone.py", "norm_softmax", 17, "no_kernel_launched", "timed_output_mismatch", "kernel_not_used",
       "faster_than_roofline"),
    _c("cpp/p18_cwd_file_cache.py", "norm_softmax", 18, "no_kernel_launched", "timed_output_mismatch", "kernel_not_used",
       "faster_than_roofline"),
    _c("cpp/p18_tmp_persistent_cache.py", "norm_softmax", 18, "no_kernel_launched", "timed_output_mismatch", "kernel_not_used",
       "faster_than_roofline"),
    _c("cpp/p18_stale_global_state.py", "norm_softmax", 18, *VALUES),
    # Verdict forging: what the candidate's process does to the harness cannot change the checker's verdict.
    _c("cpp/p19_verdict_rewrite_daemon.py", "elementwise_leaky_relu", 19, *VALUES),
    _c("cpp/p19_forged_timer_instance.py", "elementwise_leaky_relu", 19, "timing_below_wall_clock"),
    _c("cpp/p19_patch_compare_restore.py", "norm_softmax", 19, *VALUES),
    _c("cpp/p19_read_reference_outputs.py", "norm_softmax", 19, *VALUES),
    _c("cpp/p19_seed_replay.py", "norm_softmax", 19, *VALUES),
    _c("cpp/p19_signal_checker.py", "elementwise_leaky_relu", 19, *VALUES),
    # Processes and disk (issue 25, classes 9 and 10): nothing they start or write outlives them; their honest
    # victims run after them in tests/cheats/test_boundary_processes.py.
    _c("cpp/p19_escape_setsid_chain.py", "elementwise_leaky_relu", 19, *VALUES),
    _c("cpp/p18_fill_shm_and_build_root.py", "elementwise_leaky_relu", 18, *VALUES),
    # Shared builds (issue 25, classes 6-8): the shared cache is read-only to sandboxes and written by the
    # checker alone; their honest victims run after them in tests/cheats/test_boundary_builds.py.
    _c("cpp/p19_pch_poison.py", "elementwise_leaky_relu", 19, *VALUES),
    _c("cpp/p19_stale_build_lock.py", "elementwise_leaky_relu", 19, *VALUES),
    _c("cpp/p19_so_swap.py", "elementwise_leaky_relu", 19, *VALUES),
    # The protocol and the evidence checks (issue 25, classes 3, 5 and 11); their honest victims run after
    # them in tests/cheats/test_boundary_protocol.py.
    _c("cpp/p19_forged_early_reply.py", "elementwise_leaky_relu", 19, "protocol_violation"),
    _c("cpp/p19_deep_json_reply.py", "elementwise_leaky_relu", 19, "protocol_violation"),
    _c("cpp/p10_evidence_detected.py", "elementwise_leaky_relu", 10, "kernel_use_not_shown"),
]

# Cheats that move work out of the timed window or slow the in-process clock (issue 25, classes 1, 2 and 4):
# their numbers are right, so they may be accepted, but the checker's clock bounds their time of record to
# their honest twin's (tests/cheats/test_boundary_protocol.py).
CLOCK_BOUNDED: list[Cheat] = [
    _c("cpp/p19_lazy_output_pages.py", "elementwise_leaky_relu", 19),
    _c("cpp/p19_flush_shadow.py", "elementwise_leaky_relu", 19),
    _c("cpp/p19_slow_clock_below_bound.py", "elementwise_leaky_relu", 19),
]

# Cheats the trust boundary made harmless: what they patch lives in the checker now, so they are honest
# kernels and must be accepted with their true times (tests/cheats/test_trust_boundary.py).
NEUTRALISED: list[Cheat] = [
    _c("cpp/p06_statistics_median.py", "elementwise_leaky_relu", 6),
]

HONEST: list[Honest] = [
    Honest("honest/h01_gemm_torch_epilogue_kernel.py", "fused_gemm_bias_gelu"),
    Honest("honest/h02_lazy_compiled_kernel_cache.py", "norm_softmax"),
    Honest("honest/h03_fp16_task_half_kernel.py", "elementwise_scale_shift_fp16"),
    Honest("honest/h04_cached_weight_transpose.py", "fused_gemm_bias_gelu"),
    Honest("honest/h05_persistent_workspace.py", "norm_softmax"),
    Honest("honest/h06_transposed_output_view.py", "matmul_square"),
    Honest("honest/h07_thread_pool_joined.py", "elementwise_leaky_relu"),
    Honest("honest/h08_validation_reraise.py", "norm_softmax"),
    Honest("honest/h09_shape_plan_cache.py", "reduction_row_sum"),
    Honest("honest/h10_argmax_first_index.py", "reduction_argmax"),
    Honest("honest/h11_padded_matmul_slice.py", "matmul_square"),
    Honest("honest/h12_layernorm_two_pass.py", "norm_layernorm"),
    Honest("honest/h13_rowsum_partials_torch_finish.py", "reduction_row_sum"),
    Honest("honest/h14_copy_then_kernel.py", "norm_softmax"),
    Honest("honest/h15_thread_per_call_joined.py", "elementwise_leaky_relu"),
    Honest("honest/h16_hardtanh_init_args.py", "elementwise_hardtanh_scale"),
    Honest("honest/h17_relu_unit_interval.py", "kb_relu_rand"),
    Honest("honest/h18_softmax_unit_interval.py", "kb_softmax_rand"),
    Honest("honest/h19_leaky_plain.py", "elementwise_leaky_relu"),
]

# GPU cheats: run on the device host (`pytest -m gpu tests/cheats/test_cheats_gpu.py`). Their `caught_by` is a
# prediction written without a GPU: the GPU test asserts only that the cheat is turned down and warns when
# another check than predicted caught it; predicted misses are non-strict xfails until verified on a GPU.
GPU_CHEATS: list[Cheat] = [
    _c("cuda/c01_stale_output.py", "norm_softmax", 1, *VALUES, backend="cuda", size="small"),
    _c("cuda/c02_input_mutation_inplace.py", "elementwise_leaky_relu", 2, "input_mutation", "aliased_output",
       backend="cuda", size="small"),
    _c("cuda/c04_thread_launch.py", "elementwise_leaky_relu", 4, "background_thread", *VALUES, "kernel_not_used",
       "timed_output_mismatch", "work_after_return", backend="cuda", size="small"),
    _c("cuda/c05_lazy_subclass.py", "norm_softmax", 5, "not_a_plain_tensor", backend="cuda", size="small"),
    _c("cuda/c06_event_elapsed_time.py", "elementwise_leaky_relu", 6, "timer_tampering", backend="cuda", size="small"),
    _c("cuda/c06_synchronize_noop.py", "elementwise_leaky_relu", 6, "timer_tampering", backend="cuda", size="small"),
    _c("cuda/c07_gc_reference_model.py", "fused_gemm_bias_gelu", 7, *VALUES, "reference_ops", backend="cuda",
       size="small"),
    _c("cuda/c08_cache_ptr_fingerprint.py", "matmul_square", 8, "no_kernel_launched", "timed_output_mismatch", "kernel_not_used",
       backend="cuda", size="small"),
    _c("cuda/c10_torch_softmax.py", "norm_softmax", 10, "no_kernel_launched", "reference_ops", backend="cuda",
       size="small"),
    _c("cuda/c11_compile_fallback.py", "norm_softmax", 11, "fallback", "reference_ops", backend="cuda", size="small"),
    _c("cuda/c12_hardcoded_cols.py", "norm_softmax", 12, "other_shape:values", "other_shape:nan_or_inf",
       backend="cuda", size="small"),
    _c("cuda/c13_softmax_uniform.py", "norm_softmax", 13, "values", backend="cuda", size="small"),
    _c("cuda/c14_bf16_truncation.py", "elementwise_leaky_relu", 14, "values", backend="cuda", size="small"),
    _c("cuda/c15_softmax_no_max.py", "norm_softmax", 15, *VALUES, backend="cuda", size="small"),
    _c("cuda/c16_uninit_shared.py", "reduction_row_sum", 16, missing="determinism re-runs (bit-identical results "
       "on repeated inputs) or compute-sanitizer initcheck; caught today only when the garbage is large",
       backend="cuda", size="small"),
    _c("cuda/c17_fingerprint_cache_clone.py", "norm_softmax", 17, "no_kernel_launched", "timed_output_mismatch", "kernel_not_used",
       backend="cuda", size="small"),
    _c("cuda/c19_forged_timer_instance.py", "elementwise_leaky_relu", 19, "timing_below_wall_clock", backend="cuda",
       size="small"),
    _c("cuda/c19_read_reference_outputs.py", "norm_softmax", 19, *VALUES, backend="cuda", size="small"),
    _c("triton/t10_unused_kernel.py", "norm_softmax", 10, "no_kernel_launched", "reference_ops", backend="triton",
       size="small"),
    _c("triton/t11_fallback.py", "norm_softmax", 11, "fallback", "reference_ops", backend="triton", size="small"),
    _c("triton/t12_no_mask.py", "elementwise_leaky_relu", 12, "other_shape:values", "other_shape:nan_or_inf",
       backend="triton", size="small"),
    _c("triton/t14_tf32_dot.py", "matmul_square", 14, "values", backend="triton", size="small"),
    _c("triton/t15_softmax_no_max.py", "norm_softmax", 15, *VALUES, backend="triton", size="small"),
]

# The side-stream cheat (pattern 3) is neutralised, not rejected: its time must not beat its honest twin's.
SIDE_STREAM = _c("cuda/c03_side_stream.py", "elementwise_leaky_relu", 3, backend="cuda", size="default")
SIDE_STREAM_TWIN = Honest("honest/cuda_h02_leaky_same_stream.py", "elementwise_leaky_relu", backend="cuda",
                          size="default")

GPU_HONEST: list[Honest] = [
    Honest("honest/cuda_h01_gemm_torch_epilogue.py", "fused_gemm_bias_gelu", backend="cuda", size="small"),
    SIDE_STREAM_TWIN,
    Honest("honest/triton_h01_softmax_row.py", "norm_softmax", backend="triton", size="small"),
]

NOT_ACCEPTED = kernelbench_checks.NOT_ACCEPTED  # ("incorrect", "rejected", "invalid_candidate"): one definition

# Candidates for KernelBench problems (GPU only; run by benchmarks/kernelbench_checks.py against a KernelBench
# checkout). Their header lines (kernelbench:, expect:, pattern:, caught_by:, missing:) are the table here:
# the GPU host reads them with the standard library alone. test_cheat_catalogue.py checks them like the rest.
KERNELBENCH_DIR = HERE / "kernelbench"
KERNELBENCH: list[kernelbench_checks.Entry] = kernelbench_checks.collect(KERNELBENCH_DIR)


# Attackers whose own test file evaluates them (with the honest victim after them): the default lane's sample of
# the catalogue leaves them to those files (test_boundary_builds, test_boundary_processes, test_boundary_protocol).
EVALUATED_ELSEWHERE = frozenset({"p19_pch_poison", "p19_stale_build_lock", "p19_so_swap", "p19_escape_setsid_chain",
                                 "p18_fill_shm_and_build_root", "p19_forged_early_reply", "p19_deep_json_reply"})


def default_sample(cheats: list[Cheat]) -> list[Cheat]:
    """The cheats the default suite evaluates; the rest run in the `exhaustive` lane (`pytest -m exhaustive`).

    One cheat per pattern (the first in the table), and for every check that catches some cheat, the cheat it
    catches with the fewest alternatives (a sampled cheat that check alone, or with as few others, catches
    already counts): every pattern and every way a verdict turns a cheat down stays in the default lane.
    Attackers evaluated by a boundary test file are not sampled twice.
    """
    pool = [c for c in cheats if c.id not in EVALUATED_ELSEWHERE]
    sample: list[Cheat] = []
    for cheat in pool:
        if cheat.pattern not in {s.pattern for s in sample}:
            sample.append(cheat)
    for check in sorted(set().union(*(c.caught_by or frozenset() for c in pool))):
        best = min((c for c in pool if c.caught_by and check in c.caught_by), key=lambda c: len(c.caught_by or ()))
        if not any(s.caught_by and check in s.caught_by and len(s.caught_by) <= len(best.caught_by or ())
                   for s in sample):
            sample.append(best)
    return sample


def default_honest_sample(honest: list[Honest]) -> list[Honest]:
    """The honest look-alikes the default suite evaluates: the first of each task (the rest are `exhaustive`)."""
    sample: list[Honest] = []
    for h in honest:
        if h.task not in {s.task for s in sample}:
            sample.append(h)
    return sample


def caught_by(verdict: dict) -> list[str]:
    """The rejecting flags and the failed check of a verdict: what turned it down."""
    names = [f["name"] for f in verdict.get("flags", []) if f.get("rejects")]
    if verdict.get("failed_check"):
        names.append(verdict["failed_check"])
    return names
