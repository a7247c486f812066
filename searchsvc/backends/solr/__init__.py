"""The SolrCloud backend: the engine contract over a Solr collection (`solr://` locations).

- location.py: the `solr://HOST:PORT[,...]/solr/COLLECTION` locations;
- connection.py: HTTP to any live node, Solr's failures as the service's errors;
- admin.py: the shipped configset (configset/conf) and the collections behind an alias;
- documents.py: Record <-> Solr document;
- analysis.py, compile.py, terms.py: the query tree -> Solr queries of index terms;
- search.py, browse.py: the reads; backend.py: the contract.

Nothing here is imported until a location names Solr.
"""
