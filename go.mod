module github.com/nomarr/nomarr

go 1.26

require (
	github.com/valyala/fastjson v1.6.10
	go.yaml.in/yaml/v3 v3.0.4
	pgregory.net/rapid v1.3.0
)
