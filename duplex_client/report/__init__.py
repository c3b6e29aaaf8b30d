"""Reports of runs and evals: a self-contained HTML timeline page (Bokeh) and static figures.

`run_page.write_run_report`, `compare_page.write_compare_report` and
`eval_page.write_eval_report` write pages; `figure.run_figure` draws the same tracks with
matplotlib. Nothing here is imported by `import duplex_client`.
"""
