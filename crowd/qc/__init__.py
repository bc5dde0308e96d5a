"""Quality control in the app: the QC job that stores every worker's figures and
exclusions, the report pages and their figures. The statistics are the pure core's
(crowd/quality.py, crowd/agreement.py)."""
