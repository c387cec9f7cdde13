"""The thin controller: keeps policyd's catalog in sync with the cluster and acts on its decisions."""
