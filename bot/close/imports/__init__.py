"""Files people drop (CSV or XLSX, in their operators' layouts) → the close's rows.

`sheet` reads a file into a table, `recognize` tells its kind, period and column mapping,
`convert` applies a mapping and checks every cell, `intake` keeps the period's files in the
database and hands them to the loader (bot/close/data/) as rows of one kind each.
"""
