"""The graph's nodes, one module each: analyze, select_direction, retrieve, review, generate, evaluate,
update_memory, finalize. Each is a plain function of (state, runtime) returning a partial state update."""
