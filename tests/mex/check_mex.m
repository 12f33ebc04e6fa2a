% Octave test of the example MEX gateways (examples/mex/), run by
% tests/mex/run_mex_test.sh after the `sptensor` CLI has written its results
% for the same file, seed and thread count. Environment:
%   SPT_MEX_DIR  folder with the built sptensor_*.mex files
%   SPT_WORK     folder with the CLI's outputs (cpd.fit, cli.*, tucker.fit, tucker.*)
%   SPT_DATA     the tensor file (nations.tns.xz); SPT_WORK/plain.tns is it decompressed
% Every check is an assert: the first failure stops octave-cli with status 1.
mexdir = getenv('SPT_MEX_DIR');
work = getenv('SPT_WORK');
data = getenv('SPT_DATA');
addpath(mexdir);
help_text = evalc('help sptensor_cpd');
assert(~isempty(strfind(help_text, 'maxiters')), 'help sptensor_cpd shows the .m help text');

relerr = @(a, b) max(abs(a(:) - b(:))) / max(1, max(abs(b(:))));

% --- sptensor_read: the same subscripts and values as the text file --------
[subs, vals, dims] = sptensor_read(data);
plain = load(fullfile(work, 'plain.tns'));
assert(isequal(size(subs), [1992 3]) && isequal(size(vals), [1992 1]), 'read: shapes');
assert(isequal(dims, [14 55 14]), 'read: dims');
assert(isequal(sortrows([subs vals]), sortrows(plain)), 'read: subscripts and values equal the file''s');
printf('ok    sptensor_read: %d nonzeros, dims %s\n', numel(vals), mat2str(dims));

% --- sptensor_cpd: same seed and threads as `sptensor cpd` -> same model ----
opts = struct('maxiters', 8, 'tol', 0, 'seed', 1, 'threads', 2);
[lambda, U, info] = sptensor_cpd(subs, vals, dims, 4, opts);
cli_fit = load(fullfile(work, 'cpd.fit'));
printf('      mex fit %.10f, cli fit %.10f\n', info.fit, cli_fit);
assert(abs(info.fit - cli_fit) <= 1e-8, 'cpd: fit equals the CLI''s');
assert(info.iterations == 8 && ~info.converged && numel(info.fits) == 8, 'cpd: info');
assert(relerr(lambda, load(fullfile(work, 'cli.lambda.txt'))) <= 1e-9, 'cpd: lambda equals the CLI''s');
for n = 1:3
  assert(relerr(U{n}, load(fullfile(work, sprintf('cli.mode-%d.txt', n)))) <= 1e-9, ...
         sprintf('cpd: factor %d equals the CLI''s', n));
end
printf('ok    sptensor_cpd: fit, lambda and factors equal the CLI''s\n');

% user-initialised run (factors read in place) against `sptensor cpd --init`
opts_init = struct('maxiters', 2, 'tol', 0, 'threads', 2);
opts_init.init = U;
[lambda2, U2, info2] = sptensor_cpd(subs, vals, dims, 4, opts_init);
assert(abs(info2.fit - load(fullfile(work, 'cpd_init.fit'))) <= 1e-8, 'cpd init: fit equals the CLI''s');
assert(relerr(U2{2}, load(fullfile(work, 'cli_init.mode-2.txt'))) <= 1e-9, 'cpd init: factor equals the CLI''s');
printf('ok    sptensor_cpd with opts.init equals sptensor cpd --init\n');

% --- sptensor_gcp: same seed, loss and threads as `sptensor cpd --model gcp` --
[Ug, ginfo] = sptensor_gcp(subs, vals, dims, 3, struct('loss', 'bernoulli', 'maxiters', 20, 'seed', 1, 'threads', 2));
cli_objective = load(fullfile(work, 'gcp.objective'));
printf('      mex gcp objective %.10e, cli objective %.10e\n', ginfo.objective, cli_objective);
assert(abs(ginfo.objective - cli_objective) <= 1e-9 * abs(cli_objective), 'gcp: objective equals the CLI''s');
assert(ginfo.iterations == 20 && numel(ginfo.objectives) == 20 && all(diff(ginfo.objectives) <= 0), 'gcp: info');
assert(numel(Ug) == 3 && isequal(size(Ug{2}), [55 3]), 'gcp: factors');
printf('ok    sptensor_gcp: objective equals the CLI''s\n');
% GCP-SGD: same seed, settings and threads as `sptensor cpd --model gcp --optimizer sgd`
sgd_opts = struct('loss', 'bernoulli', 'optimizer', 'sgd', 'maxiters', 4, 'epochiters', 50, 'rate', 0.01, ...
                  'seed', 1, 'threads', 2);
[Us, sinfo] = sptensor_gcp(subs, vals, dims, 3, sgd_opts);
cli_estimate = load(fullfile(work, 'gcp_sgd.objective'));
printf('      mex gcp-sgd estimate %.10e, cli estimate %.10e\n', sinfo.objective, cli_estimate);
assert(abs(sinfo.objective - cli_estimate) <= 1e-9 * abs(cli_estimate), 'gcp sgd: estimate equals the CLI''s');
assert(sinfo.iterations == numel(sinfo.objectives) && all(diff(sinfo.objectives) <= 0), 'gcp sgd: info');
assert(isequal(size(Us{2}), [55 3]), 'gcp sgd: factors');
printf('ok    sptensor_gcp with opts.optimizer = ''sgd'': estimate equals the CLI''s\n');

% --- sptensor_tucker ----------------------------------------------------------
[G, Ut, tinfo] = sptensor_tucker(subs, vals, dims, [3 4 3], struct('maxiters', 5, 'tol', 0, 'threads', 2));
tucker_fit = load(fullfile(work, 'tucker.fit'));
printf('      mex tucker fit %.10f, cli tucker fit %.10f\n', tinfo.fit, tucker_fit);
assert(abs(tinfo.fit - tucker_fit) <= 1e-8, 'tucker: fit equals the CLI''s');
assert(isequal(size(G), [3 4 3]), 'tucker: core size');
core = load(fullfile(work, 'tucker.core.tns'));
assert(relerr(G(sub2ind(size(G), core(:, 1), core(:, 2), core(:, 3))), core(:, 4)) <= 1e-9, ...
       'tucker: core equals the CLI''s');
for n = 1:3
  assert(relerr(Ut{n}, load(fullfile(work, sprintf('tucker.mode-%d.txt', n)))) <= 1e-9, ...
         sprintf('tucker: factor %d equals the CLI''s', n));
  assert(norm(Ut{n}' * Ut{n} - eye(size(Ut{n}, 2))) <= 1e-10, 'tucker: orthonormal columns');
end
printf('ok    sptensor_tucker: fit, core and factors equal the CLI''s\n');

% --- sptensor_mttkrp against accumarray -----------------------------------------
for n = 1:3
  M = sptensor_mttkrp(subs, vals, dims, U, n);
  others = setdiff(1:3, n);
  want = zeros(dims(n), 4);
  for r = 1:4
    w = vals .* U{others(1)}(subs(:, others(1)), r) .* U{others(2)}(subs(:, others(2)), r);
    want(:, r) = accumarray(subs(:, n), w, [dims(n) 1]);
  end
  assert(relerr(M, want) <= 1e-12, sprintf('mttkrp: mode %d equals accumarray', n));
  M32 = sptensor_mttkrp(uint32(subs), vals, dims, U, n, struct('threads', 1));
  assert(relerr(M32, want) <= 1e-12, 'mttkrp: uint32 subscripts');
end
assert(isequal(sptensor_mttkrp(subs, vals, [], U, 2), sptensor_mttkrp(subs, vals, dims, U, 2)), 'mttkrp: DIMS [] inferred');
printf('ok    sptensor_mttkrp equals accumarray in every mode (double and uint32 subs)\n');

% --- errors: identifiers and messages ---------------------------------------------
try
  sptensor_read(fullfile(work, 'no-such-file.tns'));
  error('test:noerror', 'no error raised');
catch err
  assert(strcmp(err.identifier, 'sptensor:SPT_ERR_IO'), ['read error id: ' err.identifier]);
  assert(~isempty(strfind(err.message, 'no-such-file')), 'read error names the file');
end
% a subscript outside DIMS, named 1-based by the gateway
try
  sptensor_cpd(subs, vals, [11 55 14], 2);
  error('test:noerror', 'no error raised');
catch err
  first = find(subs(:, 1) > 11, 1);
  want = sprintf('SUBS(%d, 1) = %d exceeds DIMS(1) = 11', first, subs(first, 1));
  assert(strcmp(err.identifier, 'sptensor:usage') && ~isempty(strfind(err.message, want)), ...
         ['dims error: ' err.identifier ' ' err.message ' (want ' want ')']);
end
try
  sptensor_cpd(subs, vals);
  error('test:noerror', 'no error raised');
catch err
  assert(strcmp(err.identifier, 'sptensor:usage'), ['usage error id: ' err.identifier]);
end
try
  sptensor_tucker(subs, vals, dims, [3 99 3]);
  error('test:noerror', 'no error raised');
catch err
  assert(strcmp(err.identifier, 'sptensor:usage') && ~isempty(strfind(err.message, 'RANKS(2) = 99 exceeds DIMS(2) = 55')), ...
         ['rank error: ' err.identifier ' ' err.message]);
end
bad = subs; bad(5, 2) = 0;
try
  sptensor_mttkrp(bad, vals, dims, U, 1);
  error('test:noerror', 'no error raised');
catch err
  assert(strcmp(err.identifier, 'sptensor:usage') && ~isempty(strfind(err.message, 'SUBS(5, 2)')), ...
         ['subscript 0: ' err.identifier ' ' err.message]);
end
badv = vals; badv(7) = NaN;
try
  sptensor_cpd(subs, badv, dims, 2);
  error('test:noerror', 'no error raised');
catch err
  assert(strcmp(err.identifier, 'sptensor:usage') && ~isempty(strfind(err.message, 'VALS(7)')), ...
         ['NaN value: ' err.identifier ' ' err.message]);
end
try
  sptensor_cpd(subs, vals, dims, 2, struct('format', 'hls'));
  error('test:noerror', 'no error raised');
catch err
  assert(strcmp(err.identifier, 'sptensor:SPT_ERR_UNSUPPORTED') && ~isempty(strfind(err.message, 'HLS')), ...
         ['format hls: ' err.identifier ' ' err.message]);
end
% Unknown OPTS fields are errors naming the field and the accepted ones.
function expect_usage(f, want, what)
  try
    f();
    error('test:noerror', 'no error raised');
  catch err
    assert(strcmp(err.identifier, 'sptensor:usage') && ~isempty(strfind(err.message, want)), ...
           [what ': ' err.identifier ' ' err.message ' (want ' want ')']);
  end
end
expect_usage(@() sptensor_cpd(subs, vals, dims, 2, struct('maxIters', 5)), ...
             'opts.maxIters is not an option of sptensor_cpd: option names are lower case, did you mean opts.maxiters?', ...
             'cpd maxIters');
expect_usage(@() sptensor_cpd(subs, vals, dims, 2, struct('maxit', 5)), ...
             'opts.maxit is not an option of sptensor_cpd; the options are: maxiters, tol, seed, init, format, threads, display', ...
             'cpd maxit');
expect_usage(@() sptensor_tucker(subs, vals, dims, 2, struct('tolerance', 1e-3)), ...
             'opts.tolerance is not an option of sptensor_tucker; the options are: maxiters, tol, init, seed, threads, display', ...
             'tucker tolerance');
expect_usage(@() sptensor_mttkrp(subs, vals, dims, U, 1, struct('Threads', 1)), ...
             'did you mean opts.threads?', 'mttkrp Threads');
expect_usage(@() sptensor_read(data, struct('thread', 1)), ...
             'opts.thread is not an option of sptensor_read; the options are: threads', 'read thread');
% Shapes and indices are named 1-based.
expect_usage(@() sptensor_cpd(subs, vals, dims, 4, struct('init', {{U{1}, U{2}(1:50, :), U{3}}})), ...
             'opts.init{2} must be 55 x 4 (got 50 x 4)', 'cpd init shape');
expect_usage(@() sptensor_mttkrp(subs, vals, dims, {U{1}, U{2}, U{3}(:, 1:3)}, 1), ...
             'U{3} must be 14 x 4 (got 14 x 3)', 'mttkrp factor columns');
expect_usage(@() sptensor_mttkrp(subs, vals, dims, {U{1}, U{2}(1:54, :), U{3}}, 1), ...
             'U{2} must have 55 rows (got 54)', 'mttkrp factor rows');
expect_usage(@() sptensor_cpd(subs, vals, [14 55 0], 2), 'DIMS(3) = 0 is not a whole number', 'dims 0');
expect_usage(@() sptensor_cpd(subs, vals, dims, 2, struct('display', -1)), 'opts.display must be', 'display -1');
printf('ok    errors raise sptensor:<STATUS> / sptensor:usage with the library''s message\n');

% opts.display prints the fit every N iterations, in Tensor Toolbox's format.
out = evalc('[l, Ud, dinfo] = sptensor_cpd(subs, vals, dims, 4, struct(''maxiters'', 6, ''tol'', 0, ''seed'', 1, ''display'', 2));');
lines = regexp(out, ' Iter +(\d+): f = ([0-9.e+-]+) f-delta = ', 'tokens');
assert(numel(lines) == 3, ['display 2 over 6 iterations: ' out]);
for i = 1:3
  assert(str2double(lines{i}{1}) == 2 * i, ['display iteration numbers: ' out]);
  assert(abs(str2double(lines{i}{2}) - dinfo.fits(2 * i)) <= 1e-6, ['display fit: ' out]);
end
out = evalc('[Gd, Utd, tdinfo] = sptensor_tucker(subs, vals, dims, [2 2 2], struct(''maxiters'', 3, ''tol'', 0, ''display'', 1));');
assert(numel(regexp(out, ' Iter +\d+: f = ', 'match')) == 3, ['tucker display 1: ' out]);
assert(isempty(evalc('sptensor_cpd(subs, vals, dims, 2, struct(''maxiters'', 3));')), 'no display by default');
printf('ok    opts.display prints the fit every N iterations\n');
printf('mex: all checks passed\n');
