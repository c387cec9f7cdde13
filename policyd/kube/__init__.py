"""The catalog read from the cluster: policyd --cluster lists and watches OME's kinds itself."""
