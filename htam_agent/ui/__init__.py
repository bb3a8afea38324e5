"""`htam ui`: a local web page (Gradio, the `ui` extra) with the chat beside the live run."""
