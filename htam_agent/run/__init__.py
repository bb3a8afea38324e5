"""What one optimization run keeps outside the graph state: its live objects (`resources`), its artifact folder
(`artifacts`), what it returns (`result`) and its written report (`report`). Used by the nodes and the agent;
imports nothing above the coder and the memory. Importing this package is cheap."""
