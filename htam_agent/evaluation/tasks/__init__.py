"""Tasks: KernelBench-format problems loaded from files or folders (`loading`), and the sizes derived for files
that carry no size dicts (`sizes`: analysis, probe, search). Shared by every process of the evaluator; imports
none of the parent, the checker or the sandbox."""

from .loading import (
    SIZES,
    Task,
    TaskError,
    describe_sizes,
    has_size,
    load_task,
    load_task_source,
    load_tasks,
    task_paths,
    validate_inputs,
)

__all__ = ["SIZES", "Task", "TaskError", "describe_sizes", "has_size", "load_task", "load_task_source", "load_tasks",
           "task_paths", "validate_inputs"]
