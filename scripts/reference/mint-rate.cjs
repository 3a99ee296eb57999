#!/usr/bin/env node
// Mint rate of the TypeScript reference's formatId on Node, for the ">= 10x the reference" minting goal
// (docs/benchmarks.md, "IDs").
//
// Usage: npm ci && node mint-rate.cjs [COUNT] [ROUNDS]
//   stdout: one JSON line {"node", "count", "rounds", "rates", "median_per_second"}
//
// formatId is the reference's draw (reference-format-id.cjs, shared with the conformance-vector generator:
// human-id@4.1.3's words, index() by rejection sampling, nanoid@3.3.11 customRandom for the suffix), with
// Node's CSPRNG as the random source: random(n) = crypto.randomBytes(n), one call per read, as the reference
// reads its source.
'use strict'

const crypto = require('crypto')
const { formatId } = require('./reference-format-id.cjs')

const random = (n) => crypto.randomBytes(n)
const count = Number(process.argv[2] || 100000)
const rounds = Number(process.argv[3] || 7)
formatId('agent', random) // warm-up
for (let i = 0; i < 20000; i++) formatId('agent', random)
const rates = []
let sink = 0
for (let r = 0; r < rounds; r++) {
  const start = process.hrtime.bigint()
  for (let i = 0; i < count; i++) sink += formatId('agent', random).length
  rates.push(count / (Number(process.hrtime.bigint() - start) / 1e9))
}
const sorted = [...rates].sort((a, b) => a - b)
process.stdout.write(JSON.stringify({
  node: process.version, count, rounds, rates: rates.map(Math.round),
  median_per_second: Math.round(sorted[Math.floor(rounds / 2)]), sink: sink > 0,
}) + '\n')
