-- ocsp.lua - wrk script for bench/ocsp.sh: POST DER OCSP requests, serial by serial
--
-- Usage: wrk -tT ... -s bench/ocsp.lua URL -- TEMPLATE T MODE K
--   TEMPLATE the hex of one DER OCSPRequest whose last 4 octets are its
--            serial, B (bench/ocspreq.py template)
--   T        the same thread count as -t
--   MODE     "repeat": serials B .. B + K - 1 over and over, each thread
--            from its own offset (the same serials asked again and again);
--            "unique": thread k asks B + k - 1, B + k - 1 + T, ... so no
--            serial is asked twice in the run (K unused)
-- Each request is POST URL's path, Content-Type application/ocsp-request.
local threads = {}

-- wrk's own resolve() opens and closes a connection to check the
-- address; `openssl ocsp -port` (one process, one connection at a time,
-- OpenSSL 3.0) then spins on that closed connection and answers no one.
function wrk.resolve(host, service)
	wrk.addrs = wrk.lookup(host, service)
end

function setup(thread)
	table.insert(threads, thread)
	thread:set("tid", #threads)
end

function init(args)
	local der = args[1]:gsub("..", function(x) return string.char(tonumber(x, 16)) end)
	local b = { der:byte(#der - 3, #der) }
	prefix = der:sub(1, #der - 4)
	base = ((b[1] * 256 + b[2]) * 256 + b[3]) * 256 + b[4]
	nth = tonumber(args[2])
	unique = args[3] == "unique"
	k = tonumber(args[4] or "1")
	n = unique and (tid - 1) or math.floor((tid - 1) * k / nth)
	hdr = { ["Content-Type"] = "application/ocsp-request" }
end

local function be32(v)
	return string.char(math.floor(v / 16777216) % 256, math.floor(v / 65536) % 256,
	    math.floor(v / 256) % 256, v % 256)
end

function request()
	local s
	if unique then
		s = base + n
		n = n + nth
	else
		s = base + n % k
		n = n + 1
	end
	return wrk.format("POST", nil, hdr, prefix .. be32(s))
end
