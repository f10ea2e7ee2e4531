from tests.crawl import run_crawl


def test_crawl_with_addon_stores_every_page_in_the_corpus(farm, tmp_path):
    result = run_crawl(tmp_path, [farm.url("/index.html")], follow=True)
    assert result.returncode == 0, result.log[-3000:]
    assert len(result.items) == farm.ARTICLES + 1
    assert result.stats["focus/corpus/store"] == farm.ARTICLES + 1
