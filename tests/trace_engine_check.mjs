// systolic-tb's --trace timeline, loaded by Chrome DevTools' own trace parser (the npm package
// @paulirish/trace_engine, the Performance panel's engine), must give every span in the file a node
// and nest them tile ⊃ chunk ⊃ phase: the controller track's roots are the tiles, each tile's
// children are its chunks, each chunk's children its phases; each stream's DMA track (A, B, C) keeps
// every transfer, with double buffering too, where the transfers overlap the phases.
//
//   node trace_engine_check.mjs SYSTOLIC_TB NODE_MODULES_DIR WORK_DIR
import {execFileSync} from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import {pathToFileURL} from 'node:url';

const [tb, modules, work] = process.argv.slice(2);
if (!tb || !modules || !work) {
    console.error('usage: trace_engine_check.mjs SYSTOLIC_TB NODE_MODULES_DIR WORK_DIR');
    process.exit(2);
}
const Trace = await import(
    pathToFileURL(path.join(modules, '@paulirish/trace_engine/models/trace/trace.js')).href);
// The engine needs the browser's DOMRect (its README says to polyfill it under node).
globalThis.DOMRect ??= class {
    constructor(x = 0, y = 0, width = 0, height = 0) { Object.assign(this, {x, y, width, height}); }
};

const jobs = [
    ['seed example', []],
    ['K split', ['--array', '4', '--m', '9', '--k', '20', '--p', '7', '--k-tile', '6']],
    ['K split, partials', ['--array', '4', '--m', '9', '--k', '20', '--p', '7', '--k-tile', '6',
                           '--k-policy', 'partials']],
    ['500 tiles, functional', ['--array', '4', '--m', '80', '--k', '30', '--p', '100',
                               '--engine', 'functional']],
    ['the report\'s job', ['--array', '16', '--m', '200', '--k', '300', '--p', '100',
                           '--engine', 'functional']],
    ['double buffering', ['--array', '4', '--m', '8', '--k', '12', '--p', '16', '--buffers', 'double',
                          '--dram-bandwidth', '4']],
    ['weight stationary', ['--array', '4', '--m', '9', '--k', '20', '--p', '7', '--dataflow', 'ws']],
    ['input stationary, double buffering', ['--array', '4', '--m', '9', '--k', '20', '--p', '7',
                                            '--dataflow', 'is', '--buffers', 'double']],
];
const dma_tracks = [2, 3, 4];  // A, B, C (with the partial sums)

let failures = 0;
function check(ok, what) {
    if (!ok) {
        ++failures;
        console.error('FAIL: ' + what);
    }
    return ok;
}

fs.mkdirSync(work, {recursive: true});
for (const [label, args] of jobs) {
    const trace = path.join(work, 'trace.json'), report = path.join(work, 'report.json');
    execFileSync(tb, [...args, '--trace', trace, '--json', report, '--no-progress'], {stdio: 'ignore'});
    const rep = JSON.parse(fs.readFileSync(report, 'utf8'));
    const events = JSON.parse(fs.readFileSync(trace, 'utf8')).traceEvents;
    const written = {1: 0, 2: 0, 3: 0, 4: 0};
    for (const e of events)
        if (e.ph !== 'M') ++written[e.tid];

    const model = Trace.TraceModel.Model.createWithAllHandlers();
    await model.parse(events);
    const threads = model.parsedTrace().data.Renderer.processes.get(1).threads;
    const controller = threads.get(1);
    const where = `${label} (${args.join(' ') || 'no options'})`;

    let nodes = 0;
    const count = (n) => { ++nodes; n.children.forEach(count); };
    controller.tree.roots.forEach(count);
    check(nodes === written[1], `${where}: ${nodes} of ${written[1]} controller spans in the tree`);
    let dma_nodes = 0;
    for (const tid of dma_tracks) {
        let on_track = 0;
        const count_dma = (n) => { ++on_track; n.children.forEach(count_dma); };
        const track = threads.get(tid);
        if (track) track.tree.roots.forEach(count_dma);
        check(on_track === written[tid], `${where}: ${on_track} of ${written[tid]} DMA spans of track ${tid} in the tree`);
        dma_nodes += on_track;
    }

    check(controller.tree.roots.size === rep.tiles,
          `${where}: ${controller.tree.roots.size} roots on the controller track, ${rep.tiles} tiles`);
    for (const tile of controller.tree.roots) {
        const t = tile.entry;
        if (!check(t.cat === 'tile', `${where}: a root is "${t.name}" (${t.cat}), not a tile`)) continue;
        check(tile.children.length === rep.k_chunks,
              `${where}: ${t.name} has ${tile.children.length} children, ${rep.k_chunks} chunks expected`);
        tile.children.forEach((chunk, c) => {
            const k = chunk.entry;
            if (!check(k.cat === 'chunk' && k.args.tile === t.args.tile && k.args.chunk === c,
                       `${where}: child ${c} of ${t.name} is "${k.name}" (${k.cat}, tile ${k.args.tile})`))
                return;
            const names = chunk.children.map((p) => p.entry.name);
            check(chunk.children.every((p) => p.entry.cat === 'phase' && p.entry.args.tile === t.args.tile &&
                                              p.entry.args.chunk === c && p.children.length === 0),
                  `${where}: ${t.name} ${k.name} holds ${names.join(', ')}: not its phases alone`);
            // With double buffering a load from the scratchpads takes no time, and has no span.
            check((names.includes('load') || args.includes('double')) && names.includes('advance'),
                  `${where}: ${t.name} ${k.name} has no load or no advance (${names.join(', ')})`);
        });
    }
    console.log(`${where}: ${nodes} controller spans (${rep.tiles} tiles x ${rep.k_chunks} chunks), ` +
                `${dma_nodes} DMA spans`);
}
process.exit(failures ? 1 : 0);
