module redis-bf/examples/go_crawl

go 1.17

require github.com/gomodule/redigo v1.8.3

// redigo from Debian's golang-github-gomodule-redigo-dev: built offline, nothing downloaded. Where
// that package is not installed, delete this line and run `go mod tidy` to fetch redigo instead.
replace github.com/gomodule/redigo => /usr/share/gocode/src/github.com/gomodule/redigo
