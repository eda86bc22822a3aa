//! The crawler preset keeps pages told apart only by a word-valued parameter.
//!
//! Real lists fold such pages: a webring hub (`?ring=caern` and `?ring=vtes` are two rings), a
//! pet gallery (`?pet_name=`), an editor's page (`?editor=`), the OpenBSD manual
//! (`man.cgi?command=open&section=2` and `?command=read&section=2`). Their values vary across
//! otherwise-equal URLs and are words or slugs: they name pages. Presentation parameters
//! (`ref`, `sort`, `color`, `highlight`, ...) still fold.

use url_dedup_similarity::{Preset, SimilarityFilter};

fn crawler() -> SimilarityFilter {
    SimilarityFilter::builder()
        .expected_items(10_000)
        .false_positive_rate(0.001)
        .preset(Preset::Crawler)
        .build()
        .unwrap()
}

#[test]
fn word_valued_parameters_name_pages() {
    for pages in [
        [
            "http://www.webring.example/hub?ring=caern",
            "http://www.webring.example/hub?ring=vtes",
        ],
        [
            "https://pets.example/show.php?pet_name=rex",
            "https://pets.example/show.php?pet_name=felix",
        ],
        [
            "https://mag.example/staff?editor=alice",
            "https://mag.example/staff?editor=bob",
        ],
        [
            "https://man.openbsd.org/man.cgi?command=open&section=2",
            "https://man.openbsd.org/man.cgi?command=read&section=2",
        ],
        [
            "https://w.example/index.php?title=Main_Page",
            "https://w.example/index.php?title=Help",
        ],
        // A news portal's topics, from a real list (newsnow.co.uk).
        [
            "http://www.newsnow.co.uk/NewsLink.htm?Theme=Electronic+Commerce",
            "http://www.newsnow.co.uk/NewsLink.htm?Theme=Windows+NT",
        ],
    ] {
        let mut f = crawler();
        assert!(f.check_and_insert(pages[0]).is_new());
        let v = f.check_and_insert(pages[1]);
        assert!(
            v.is_new(),
            "{} folded into {}: {}",
            pages[1],
            pages[0],
            f.explain(&v)
        );
    }
}

#[test]
fn presentation_parameters_still_fold() {
    for [first, variant] in [
        [
            "https://news.example/2024/05/story-7.html",
            "https://news.example/2024/05/story-7.html?ref=rss",
        ],
        [
            "https://shop.example/item/7",
            "https://shop.example/item/7?color=red",
        ],
        [
            "https://shop.example/list?page=1&sort=price",
            "https://shop.example/list?page=1&sort=name",
        ],
        [
            "https://forum.example/thread/9",
            "https://forum.example/thread/9?highlight=rust",
        ],
        [
            "https://news.example/a/b.html",
            "https://news.example/a/b.html?share=x",
        ],
    ] {
        let mut f = crawler();
        assert!(f.check_and_insert(first).is_new());
        let v = f.check_and_insert(variant);
        assert!(
            v.is_similar(),
            "{variant} not folded into {first}: {}",
            f.explain(&v)
        );
    }
}
