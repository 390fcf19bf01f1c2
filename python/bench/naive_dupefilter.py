"""The benchmark's "20-line BF.ADD dupefilter": what a scrapy-redis user writes first.

One BF.ADD per request into ``<spider>:dupefilter``. Nothing reserves the key, so the first BF.ADD
creates it with the module's defaults (capacity 100 at 1%), unless the benchmark reserved it
beforehand (the fourth row: ``BF.RESERVE site:dupefilter 0.001 10000``).
"""

from scrapy_redis.dupefilter import RFPDupeFilter


class BFAddDupeFilter(RFPDupeFilter):  # type: ignore[misc]
    def request_seen(self, request) -> bool:  # type: ignore[no-untyped-def]
        fingerprint = self.request_fingerprint(request)
        # 1 (RESP2) or True (RESP3): the request was new.
        return self.server.execute_command("BF.ADD", self.key, fingerprint) == 0
