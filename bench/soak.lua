-- soak.lua - wrk script for bench/soak.sh: mixed check requests; counts non-200s and filter versions going down
--
-- Run with as many threads as connections (-t N -c N): each thread then
-- owns one connection, so "the version never goes down" is per client.
-- done() prints one line: "SOAK requests=N bad=N down=N nover=N maxver=N".
local threads = {}

function setup(thread)
	thread:set("id", #threads)
	table.insert(threads, thread)
end

function init(args)
	bad, down, nover, last, n, maxver = 0, 0, 0, 0, 0, 0
	local paths = {
		"/v1/check?id=tok-1", "/v1/check?id=clean-" .. math.random(1000000),
		"/v1/check?id=x&scope=nowhere", "/v1/check?id=tok-2",
	}
	reqs = {}
	for i, p in ipairs(paths) do
		reqs[i] = wrk.format("GET", p)
	end
	reqs[#reqs + 1] = wrk.format("POST", "/v1/check",
		{ ["Content-Type"] = "application/json" },
		'{"items": [{"id": "tok-1"}, {"id": "tok-3"}, {"id": "zz"}]}')
	i = 0
end

function request()
	i = i % #reqs + 1
	return reqs[i]
end

function response(status, headers, body)
	n = n + 1
	if status ~= 200 then
		bad = bad + 1
		return
	end
	local v = tonumber(headers["X-Revcheck-Filter-Version"])
	if v == nil then
		nover = nover + 1
		return
	end
	if v < last then down = down + 1 end
	if v > last then last = v end
	if v > maxver then maxver = v end
end

function done(summary, latency, requests)
	local t = { n = 0, bad = 0, down = 0, nover = 0, maxver = 0 }
	for _, th in ipairs(threads) do
		t.n = t.n + th:get("n")
		t.bad = t.bad + th:get("bad")
		t.down = t.down + th:get("down")
		t.nover = t.nover + th:get("nover")
		if th:get("maxver") > t.maxver then t.maxver = th:get("maxver") end
	end
	io.write(string.format("SOAK requests=%d bad=%d down=%d nover=%d maxver=%d errors=%d\n",
		t.n, t.bad, t.down, t.nover, t.maxver,
		summary.errors.connect + summary.errors.read + summary.errors.write +
		summary.errors.timeout))
end
