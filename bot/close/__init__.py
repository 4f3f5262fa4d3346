"""The month-end close: data, checks, entries, the toolset and the offline playbook."""
