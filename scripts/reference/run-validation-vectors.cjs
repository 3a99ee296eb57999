#!/usr/bin/env node
// Checks a product's ID validator against conformance/validation-vectors.json. Dependency-free (Node 18+);
// copy it as it is.
//
// Usage:
//   node run-validation-vectors.cjs --vectors conformance/validation-vectors.json \
//     --module api/src/slices/setup/id/domain/idFormat.js --product bonsite \
//     [--export isId] [--prefix-map prefix-map.json]
//
//   --module      a CommonJS or ES module (a .ts module too, if your Node strips types)
//   --export      the validator's name in that module; a dotted path reaches into an object
//                 (byProduct.shiffty). Default: isId
//   --product     run the cases of this product only (agentfy, bonsite, securify, shiffty, store-deputy)
//   --prefix-map  a JSON object from Agentfy's prefixes (the file's "prefixes") to your own, one to one,
//                 for a registry that lacks Agentfy's: each case's prefix argument is replaced, and so is
//                 the value's leading prefix (the longest of the file's prefixes followed by "-"). A case
//                 whose value the map moves across the length limit (80) is skipped and counted.
//
// Each case is called as validator(value, prefix), with prefix undefined when the case's prefix is null, and
// must return exactly the boolean `valid`; a throw or a non-boolean is a failure. Every failing case is
// named on stderr with its index in "cases", its reason, the call and the results.
// Exit status: 0 when every case passes, 1 when any fails, 2 on a usage or file error.
'use strict'

const fs = require('fs')
const path = require('path')
const { pathToFileURL } = require('url')

const FORMAT = 'agentfy-validation-vectors/1'
const SHOWN_FAILURES = 50
const USAGE = 'usage: node run-validation-vectors.cjs --vectors FILE --module PATH --product NAME ' +
  '[--export NAME] [--prefix-map FILE]\n'

function usageError(message) {
  process.stderr.write(`run-validation-vectors: ${message}\n${USAGE}`)
  process.exit(2)
}

function parseArguments(argv) {
  const options = { export: 'isId' }
  const names = { '--vectors': 'vectors', '--module': 'module', '--product': 'product', '--export': 'export',
    '--prefix-map': 'prefixMap' }
  for (let i = 0; i < argv.length; i += 2) {
    const name = names[argv[i]]
    if (name === undefined) usageError(`unknown argument ${JSON.stringify(argv[i])}`)
    if (i + 1 >= argv.length) usageError(`${argv[i]} needs a value`)
    options[name] = argv[i + 1]
  }
  for (const required of ['vectors', 'module', 'product']) {
    if (options[required] === undefined) usageError(`--${required} is required`)
  }
  return options
}

function readJson(file, what) {
  try {
    return JSON.parse(fs.readFileSync(file, 'utf8'))
  } catch (error) {
    return usageError(`cannot read the ${what} ${file}: ${error.message}`)
  }
}

function readVectors(file, product) {
  const vectors = readJson(file, 'vectors')
  if (vectors.format !== FORMAT) usageError(`${file} is ${JSON.stringify(vectors.format)}, expected ${FORMAT}`)
  if (!Array.isArray(vectors.cases) || vectors.cases.length !== vectors.case_count) {
    usageError(`${file} holds ${vectors.cases?.length} cases, its header says ${vectors.case_count}`)
  }
  if (!vectors.products.includes(product)) {
    usageError(`unknown product ${JSON.stringify(product)}; the file has ${vectors.products.join(', ')}`)
  }
  return vectors
}

async function loadValidator(modulePath, exportPath) {
  const loaded = await import(pathToFileURL(path.resolve(modulePath)).href)
  const [first, ...rest] = exportPath.split('.')
  // A CommonJS module's exports are the namespace's default; its names may or may not be copied next to it.
  let target = first in loaded ? loaded[first] : loaded.default?.[first]
  for (const name of rest) target = target?.[name]
  if (typeof target !== 'function') usageError(`${modulePath} exports no function ${exportPath}`)
  return target
}

// Rewrites Agentfy's prefixes into a product's own: the prefix argument, and the value's leading prefix.
function prefixMapper(file, prefixes) {
  if (file === undefined) return { prefix: (prefix) => prefix, value: (value) => value }
  const map = readJson(file, 'prefix map')
  const targets = Object.values(map)
  for (const [from, to] of Object.entries(map)) {
    if (!prefixes.includes(from)) usageError(`prefix map: ${JSON.stringify(from)} is not one of the file's prefixes`)
    if (typeof to !== 'string' || to === '') usageError(`prefix map: ${JSON.stringify(from)} maps to no prefix`)
  }
  if (new Set(targets).size !== targets.length) usageError('prefix map: two prefixes map to the same one')
  const longestFirst = [...prefixes].sort((a, b) => b.length - a.length)
  return {
    prefix: (prefix) => (prefix !== undefined && prefix in map ? map[prefix] : prefix),
    value: (value) => {
      if (typeof value !== 'string') return value
      const head = longestFirst.find((prefix) => value.startsWith(`${prefix}-`))
      return head !== undefined && head in map ? map[head] + value.slice(head.length) : value
    },
  }
}

// JSON, with every character outside printable ASCII escaped, so whitespace and look-alikes show.
function show(value) {
  if (value === undefined) return 'undefined'
  return JSON.stringify(value).replace(/[^\x20-\x7e]/g, (c) => `\\u${c.charCodeAt(0).toString(16).padStart(4, '0')}`)
}

function check(validator, testCase, mapper) {
  const prefix = mapper.prefix(testCase.prefix === null ? undefined : testCase.prefix)
  const value = mapper.value(testCase.value)
  const call = `(${show(value)}, ${show(prefix)})`
  let got
  try {
    got = validator(value, prefix)
  } catch (error) {
    return `${call} threw ${error && error.name}: ${error && error.message}; expected ${testCase.valid}`
  }
  if (typeof got !== 'boolean') return `${call} returned ${show(got)} (${typeof got}); expected ${testCase.valid}`
  return got === testCase.valid ? null : `${call} returned ${got}; expected ${testCase.valid}`
}

async function main() {
  const options = parseArguments(process.argv.slice(2))
  const vectors = readVectors(options.vectors, options.product)
  const mapper = prefixMapper(options.prefixMap, vectors.prefixes)
  const validator = await loadValidator(options.module, options.export)
  let checked = 0
  let skipped = 0
  const failures = []
  const failedReasons = {}
  const tooLong = (value) => typeof value === 'string' && value.length > vectors.max_length
  vectors.cases.forEach((testCase, index) => {
    if (testCase.product !== options.product) return
    if (tooLong(testCase.value) !== tooLong(mapper.value(testCase.value))) {
      skipped += 1 // a longer or shorter prefix moved the value across the length limit: no verdict to check
      return
    }
    checked += 1
    const problem = check(validator, testCase, mapper)
    if (problem === null) return
    failures.push(`FAIL case ${index} [${testCase.reason}] ${options.product} ${options.export}${problem}`)
    failedReasons[testCase.reason] = (failedReasons[testCase.reason] ?? 0) + 1
  })
  if (checked === 0) usageError(`${options.vectors} has no case for ${options.product}`)
  const skippedNote = skipped === 0 ? ''
    : `; ${skipped} skipped: the prefix map moved their value across the ${vectors.max_length}-character limit`
  if (failures.length === 0) {
    process.stdout.write(`${options.product}: all ${checked} cases pass (${options.vectors})${skippedNote}\n`)
    return 0
  }
  const shown = failures.slice(0, SHOWN_FAILURES)
  if (failures.length > shown.length) shown.push(`... and ${failures.length - shown.length} more`)
  const byReason = Object.entries(failedReasons).map(([reason, count]) => `${reason}: ${count}`).join(', ')
  process.stderr.write(`${shown.join('\n')}\n${options.product}: ${failures.length} of ${checked} cases ` +
    `failed (${byReason})${skippedNote}\n`)
  return 1
}

main().then((status) => { process.exitCode = status }, (error) => {
  process.stderr.write(`run-validation-vectors: ${error && error.stack}\n`)
  process.exitCode = 2
})
