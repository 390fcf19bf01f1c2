// Command go_crawl is a crawler's front end in Go: it asks redis-bf which of the URLs it has just
// discovered it has never seen, one BF.MADD per batch, and fetches only those.
//
// Usage: go run . [--port 6379] [--pages 100000] [--batch 100] [--capacity 1000000]
// [--error-rate 0.001]
//
// The site is synthetic: `--pages` pages that link to each other, eight links a page, most of them
// to pages already discovered (the home page, the neighbours, the parent, ...). The crawl starts
// at the home page; it takes up to `--batch` pages from its queue, fetches them (here: lists their
// links), sends every link they hold in one BF.MADD, and queues the URLs answered 1 (new). A URL
// answered 0 was (almost certainly) seen before and is skipped; a false positive (at the error
// rate) skips a page that was never fetched, a URL seen before is never answered 1.
//
// It runs against whatever server is on --port (it must have the module), on 127.0.0.1: it uses the
// key crawl:go:seen and deletes it when done, and leaves everything else alone.
package main

import (
	"errors"
	"flag"
	"fmt"
	"os"
	"strconv"
	"strings"

	"github.com/gomodule/redigo/redis"
)

const key = "crawl:go:seen"

func main() {
	port := flag.Int("port", 6379, "the port of the Redis server (on 127.0.0.1) with the module")
	pages := flag.Int("pages", 100000, "pages on the synthetic site")
	batch := flag.Int("batch", 100, "pages fetched between two BF.MADD calls")
	capacity := flag.Int("capacity", 1000000, "URLs the filter is sized for")
	errorRate := flag.Float64("error-rate", 0.001, "the filter's false-positive rate")
	flag.Parse()
	if *pages < 1 || *batch < 1 {
		fail("--pages and --batch must be at least 1")
	}

	addr := fmt.Sprintf("127.0.0.1:%d", *port)
	conn, err := redis.Dial("tcp", addr)
	if err != nil {
		fail("cannot connect to the Redis server at %s: %v", addr, err)
	}
	defer conn.Close()

	existed, err := reserve(conn, *errorRate, *capacity)
	if err != nil {
		if strings.Contains(err.Error(), "unknown command") {
			fail("the Redis server at %s has no Bloom filter module loaded: start one with "+
				"`make run` (it prints its port) and pass that port with --port", addr)
		}
		fail("BF.RESERVE %s: %v", key, err)
	}

	filter := fmt.Sprintf("filter %s sized for %s URLs at %.2f%%", key, thousands(*capacity),
		*errorRate*100)
	if existed {
		filter = fmt.Sprintf("filter %s already there, used as it is", key)
	}
	fmt.Printf("%s pages on the site; %s; batches of %s pages\n", thousands(*pages), filter,
		thousands(*batch))

	seen, fetched, calls := 0, 0, 0
	// The start URL goes through the filter like any other: a crawl that resumes with its filter
	// does not fetch the home page again.
	discovered := []string{url(0)}
	var queue []string
	for {
		if len(discovered) > 0 {
			fresh, err := firstTime(conn, discovered)
			if err != nil {
				fail("BF.MADD %s: %v", key, err)
			}
			calls++
			seen += len(discovered)
			queue = append(queue, fresh...)
		}
		if len(queue) == 0 {
			break
		}
		n := min(*batch, len(queue))
		discovered = discovered[:0]
		for _, page := range queue[:n] {
			discovered = append(discovered, fetch(page, *pages)...)
			fetched++
		}
		queue = queue[n:]
	}

	fmt.Printf("%s URLs discovered, %s new (fetched), %s duplicates skipped; %s BF.MADD calls; "+
		"pages never reached: %s\n", thousands(seen), thousands(fetched), thousands(seen-fetched),
		thousands(calls), thousands(*pages-fetched))

	if _, err := conn.Do("DEL", key); err != nil {
		fail("DEL %s: %v", key, err)
	}
}

// reserve creates the crawl's filter; true if it was already there ("ERR item exists": a crawl
// that resumes, or another worker of the same crawl), and then it is used as it is.
func reserve(conn redis.Conn, errorRate float64, capacity int) (bool, error) {
	_, err := conn.Do("BF.RESERVE", key, errorRate, capacity)
	var reply redis.Error
	if errors.As(err, &reply) && strings.Contains(reply.Error(), "item exists") {
		return true, nil
	}
	return false, err
}

// firstTime sends urls in one BF.MADD, which adds them all, and returns those it answered 1: never
// seen before (a URL listed twice in one batch is answered 1 the first time only).
func firstTime(conn redis.Conn, urls []string) ([]string, error) {
	replies, err := redis.Ints(conn.Do("BF.MADD", redis.Args{key}.AddFlat(urls)...))
	if err != nil {
		return nil, err
	}
	if len(replies) != len(urls) {
		return nil, fmt.Errorf("%d replies for %d URLs", len(replies), len(urls))
	}
	var fresh []string
	for i, added := range replies {
		if added == 1 {
			fresh = append(fresh, urls[i])
		}
	}
	return fresh, nil
}

// url is the address of page i of the synthetic site.
func url(i int) string {
	if i == 0 {
		return "https://shop.example/"
	}
	return "https://shop.example/item/" + strconv.Itoa(i)
}

// fetch "fetches" a page: the eight links it holds, to the home page, its neighbours, its parent
// and children, and two pages further away. Most of them lead to pages discovered before.
func fetch(page string, pages int) []string {
	i := 0
	if rest := strings.TrimPrefix(page, "https://shop.example/item/"); rest != page {
		i, _ = strconv.Atoi(rest)
	}
	targets := []int{0, i - 1, i + 1, i / 2, 2 * i, 2*i + 1, i*7 + 3, i*13 + 11}
	links := make([]string, len(targets))
	for n, target := range targets {
		links[n] = url(((target % pages) + pages) % pages)
	}
	return links
}

func min(a, b int) int {
	if a < b {
		return a
	}
	return b
}

// thousands writes n with commas: 1,000,000.
func thousands(n int) string {
	digits := strconv.Itoa(n)
	if n < 0 {
		return "-" + thousands(-n)
	}
	var out strings.Builder
	for i, digit := range digits {
		if i > 0 && (len(digits)-i)%3 == 0 {
			out.WriteByte(',')
		}
		out.WriteRune(digit)
	}
	return out.String()
}

// fail stops the example with one line on standard error, as the Python examples do.
func fail(format string, args ...interface{}) {
	fmt.Fprintf(os.Stderr, "error: "+format+"\n", args...)
	os.Exit(1)
}
