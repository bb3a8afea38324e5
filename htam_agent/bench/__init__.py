"""`htam bench`: methods at equal evaluation budget on a suite, resumable records, metrics and the report.

Submodules import their heavy dependencies (matplotlib, ray, torch, the agent) inside functions, so importing
this package stays cheap.
"""
